package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
)

// forge sends a signal on bus from a connection of the unprivileged user
// nobody (Debian's dbus-send, run as that user): to every connection that
// subscribed, or only to dest when it is set. args are dbus-send's typed
// arguments (boolean:true, string:x).
func forge(t *testing.T, bus, dest string, path, signal string, args ...string) {
	t.Helper()
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
	gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)
	cmdArgs := []string{"--bus=" + bus, "--type=signal"}
	if dest != "" {
		cmdArgs = append(cmdArgs, "--dest="+dest)
	}
	cmdArgs = append(append(cmdArgs, path, signal), args...)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "dbus-send", cmdArgs...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dbus-send %s as nobody: %v\n%s", strings.Join(cmdArgs, " "), err, out)
	}
}

// TestGracefulNodeShutdownForgedSignals: on a bus with the system bus's
// policy, an unprivileged user's connection that announces a shutdown
// (PrepareForShutdown(true), to everyone and to podvisor's connection
// alone) or says logind left (NameOwnerChanged, likewise) stops no pod and
// drops no lock: podvisor warns and goes on, its node Ready. Then a real
// shutdown from logind still stops both pods, each with its preStop hook
// and SIGTERM within its group's period, GET /node says NotReady as the
// mirrored Node does, and the health port stays ok as kubelet's does.
func TestGracefulNodeShutdownForgedSignals(t *testing.T) {
	t.Parallel()
	bus := startBus(t)
	ld := startLogind(t, bus, 30*time.Second)
	healthz := freePort(t)
	d := newDaemon(t, "--shutdown-grace-period", "16s", "--shutdown-grace-period-critical-pods", "8s", "--healthz-bind-address", healthz)
	d.env = []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus}
	d.start()
	l := ld.next("inhibit ", 20*time.Second)
	_, podvisorConn, _ := strings.Cut(l, " sender=")
	if !strings.Contains(l, "who=podvisor") || podvisorConn == "" {
		t.Fatalf("lock taken: %s, want podvisor's with its connection's name", l)
	}
	normal, _, logs := writeShutdownPods(d)
	for name, log := range logs {
		d.waitPod(name, 60*time.Second, "Running", running)
		d.poll(name+"'s trap set", 20*time.Second, func() (bool, string) {
			order, _ := stamps(t, log, 0)
			return len(order) > 0, fmt.Sprint(order)
		})
	}
	client := api.NewClient(d.sock)

	// Forged, to everyone (the bus delivers it to podvisor only if its
	// match rule lets any sender through) and to podvisor's connection
	// alone (no match rule applies: only podvisor's own check).
	const logindPath, busPath = "/org/freedesktop/login1", "/org/freedesktop/DBus"
	prepare, owner := "org.freedesktop.login1.Manager.PrepareForShutdown", "org.freedesktop.DBus.NameOwnerChanged"
	left := []string{"string:org.freedesktop.login1", "string:" + ld.name, "string:"}
	forge(t, bus, "", logindPath, prepare, "boolean:true")
	forge(t, bus, "", busPath, owner, left...)
	forge(t, bus, podvisorConn, logindPath, prepare, "boolean:true")
	forge(t, bus, podvisorConn, busPath, owner, left...)

	// Until podvisor has handled both signals addressed to it (it warns
	// of each), or has obeyed one of them.
	var obeyed []string
	d.poll("podvisor to handle the forged signals", 30*time.Second, func() (bool, string) {
		obeyed = nil
		for name := range logs {
			if p, err := d.pod(name); err == nil && !running(p) {
				obeyed = append(obeyed, fmt.Sprintf("%s is %s (%s)", name, p.Status.Phase, p.Status.Reason))
			}
		}
		if locks := ld.locks(); locks != "n=1 who=podvisor" {
			obeyed = append(obeyed, "logind's delay locks: "+locks)
		}
		b, _ := os.ReadFile(d.logFile)
		warned := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "forged signal ignored: not sent by logind or the bus") {
				warned++
			}
		}
		return warned >= 2 || len(obeyed) > 0, fmt.Sprintf("%d forged-signal warnings; %q", warned, obeyed)
	})
	if len(obeyed) > 0 {
		t.Fatalf("podvisor obeyed a forged signal: %s", strings.Join(obeyed, "; "))
	}
	for name, log := range logs {
		if order, _ := stamps(t, log, 0); strings.Join(order, " ") != "main" {
			t.Errorf("%s: %q in the container after forged signals, want only its start (no preStop, no SIGTERM)", name, order)
		}
	}
	if err := client.Healthz(context.Background()); err != nil {
		t.Errorf("healthz after forged signals: %v", err)
	}
	checkNodeReady(t, client, nil)

	// A real shutdown from logind.
	start := uptime(t)
	ld.send("shutdown")
	ld.next("prepare shutdown", 5*time.Second)
	d.waitPod(normal, 20*time.Second, "stopped for the shutdown", stoppedForShutdown)
	checkNodeReady(t, client, errors.New(shutdownNode))
	// The health port is kubelet's liveness: ok while the node shuts down.
	if code, body := getHealthz(t, healthz); code != http.StatusOK || body != "ok" {
		t.Errorf("GET http://%s/healthz while the node shuts down: %d %q, want 200 ok (kubelet's)", healthz, code, body)
	}
	if proceed := ld.next("proceed ", 30*time.Second); !strings.HasPrefix(proceed, "proceed released") {
		t.Errorf("logind went on with %q, want the lock released before its 30s bound", proceed)
	}
	checkStoppedInOrder(t, d, logs, nil, "shutdown", "main preStop TERM", start)
}

// getHealthz is GET http://addr/healthz's status and body.
func getHealthz(t *testing.T, addr string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Errorf("GET http://%s/healthz: %v", addr, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
