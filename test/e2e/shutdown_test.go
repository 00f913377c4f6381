package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// Kubelet's words for a pod stopped for the node's shutdown, and the
// node's Ready message meanwhile.
const (
	shutdownReason  = "Terminated"
	shutdownMessage = "Pod was terminated in response to imminent node shutdown."
	shutdownNode    = "node is shutting down"
)

// busConfig is a private bus's configuration: the system bus's default
// policy (Debian's /usr/share/dbus-1/system.conf: every user may connect
// and send signals, to everyone or to one connection, and call the bus
// itself, but own no name and call no service) and root may own any name
// and send anything (podvisor and the logind stand-in both run as root).
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
  </policy>
  <policy user="root">
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// startBus starts a private dbus-daemon and returns its address.
func startBus(t *testing.T) string {
	t.Helper()
	// Its own directory, which every user may enter, as the system bus's
	// socket is reachable by all.
	dir, err := os.MkdirTemp("", "pv-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(busConfig, filepath.Join(dir, "bus.sock"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--print-address", "--nofork", "--nopidfile")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("dbus-daemon (Debian's dbus-daemon): %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(line)
		io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addr:
		if a == "" {
			t.Fatal("dbus-daemon printed no address")
		}
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon printed no address within 10s")
	}
	return ""
}

var (
	logindOnce sync.Once
	logindBin  string
	logindErr  error
)

// logind is the test's logind stand-in (test/logind) on a private bus.
type logind struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
	// name is its connection's unique name on the bus.
	name string
}

func startLogind(t *testing.T, bus string, delay time.Duration) *logind {
	t.Helper()
	logindOnce.Do(func() {
		logindBin = filepath.Join(filepath.Dir(podvisorBin), "logind")
		out, err := exec.Command("go", "build", "-o", logindBin, "github.com/podvisor/podvisor/test/logind").CombinedOutput()
		if err != nil {
			logindErr = fmt.Errorf("build test/logind: %v\n%s", err, out)
		}
	})
	if logindErr != nil {
		t.Fatal(logindErr)
	}
	cmd := exec.Command(logindBin, "-address", bus, "-delay", delay.String())
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	l := &logind{t: t, in: in, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
	}()
	l.name = strings.TrimPrefix(l.next("ready name=", 10*time.Second), "ready name=")
	return l
}

// locks is the service's report of the delay locks on shutdown it holds
// now: "n=N who=A,B".
func (l *logind) locks() string {
	l.t.Helper()
	l.send("locks")
	return strings.TrimPrefix(l.next("locks ", 10*time.Second), "locks ")
}

// next waits for the service's next line that starts with prefix,
// skipping others, and returns it.
func (l *logind) next(prefix string, timeout time.Duration) string {
	l.t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.t.Fatalf("logind stand-in ended; waiting for %q after %q", prefix, seen)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
			seen = append(seen, line)
		case <-deadline:
			l.t.Fatalf("logind stand-in: no %q within %s (saw %q)", prefix, timeout, seen)
		}
	}
}

// quit ends the service and waits for its output to end.
func (l *logind) quit() {
	l.t.Helper()
	l.send("quit")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-l.lines:
			if !ok {
				return
			}
		case <-deadline:
			l.t.Fatal("logind stand-in did not quit within 10s")
		}
	}
}

func (l *logind) send(cmd string) {
	l.t.Helper()
	if _, err := fmt.Fprintln(l.in, cmd); err != nil {
		l.t.Fatal(err)
	}
}

// shutdownScript logs, with the host's uptime (containers share it), its
// start and the stop signal to /host/NAME.log; the preStop hook logs its
// start and takes a second.
const shutdownScript = `trap 'echo TERM $(cut -d" " -f1 /proc/uptime) >> /host/%[1]s.log; exit 0' TERM
echo main $(cut -d" " -f1 /proc/uptime) >> /host/%[1]s.log
sleep 3600 & wait`

func shutdownManifest(name, namespace, class, dir string) string {
	prio := ""
	if class != "" {
		prio = "  priorityClassName: " + class + "\n"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  terminationGracePeriodSeconds: 20
%[3]s  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[4]q]
    volumeMounts: [{name: host, mountPath: /host}]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo preStop $(cut -d' ' -f1 /proc/uptime) >> /host/%[1]s.log; sleep 1"]}
  volumes:
  - name: host
    hostPath: {path: %[5]s, type: Directory}
`, name, namespace, prio, fmt.Sprintf(shutdownScript, name), dir)
}

// writeShutdownPods writes the manifests of a normal and a critical pod
// whose containers stamp what they do in files of d's, and returns the
// pods' names and each one's file, by name.
func writeShutdownPods(d *daemon) (normal, critical string, logs map[string]string) {
	dir := d.hostDir("stamps")
	normal, critical = "normal-"+node, "critical-"+node
	d.writeManifest("normal.yaml", shutdownManifest("normal", "default", "", dir))
	d.writeManifest("critical.yaml", shutdownManifest("critical", "kube-system", "system-node-critical", dir))
	return normal, critical, map[string]string{normal: filepath.Join(dir, "normal.log"), critical: filepath.Join(dir, "critical.log")}
}

// stamps reads NAME.log: each line's word and uptime, from line from on.
func stamps(t *testing.T, path string, from int) ([]string, map[string]float64) {
	t.Helper()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var order []string
	at := map[string]float64{}
	for _, l := range lines[min(from, len(lines)):] {
		if l == "" {
			continue
		}
		word, v, _ := strings.Cut(l, " ")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s: line %q", path, l)
		}
		order = append(order, word)
		at[word] = f
	}
	return order, at
}

func uptime(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

func lineCount(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

// checkStoppedInOrder waits for the normal and the critical pod (logs
// holds each one's stamps file) to be stopped for the shutdown, their
// containers terminated; checks that each container stamped want from
// line from[name] of its file on; and that they were stopped in order: the
// normal pod's SIGTERM within its group's 8s of start (the uptime when
// logind announced the shutdown, called what), the critical pod's preStop
// only after it, and its SIGTERM within its own group's 8s.
func checkStoppedInOrder(t *testing.T, d *daemon, logs map[string]string, from map[string]int, what, want string, start float64) {
	t.Helper()
	normal, critical := "normal-"+node, "critical-"+node
	at := map[string]map[string]float64{}
	for name, log := range logs {
		d.waitPod(name, 10*time.Second, "stopped for the "+what+", its container terminated", func(p *v1.Pod) bool {
			return stoppedForShutdown(p) && containerStatus(p, "main").State.Terminated != nil
		})
		order, ts := stamps(t, log, from[name])
		if strings.Join(order, " ") != want {
			t.Errorf("%s: %q in the container after the %s, want %q", name, order, what, want)
		}
		at[name] = ts
	}
	if el := at[normal]["TERM"] - start; el > 8.5 {
		t.Errorf("normal pod's SIGTERM %.2fs after the announcement, want within its group's 8s", el)
	}
	if at[critical]["preStop"] < at[normal]["TERM"] {
		t.Errorf("critical pod's preStop at %.2f, before the normal pod's SIGTERM at %.2f", at[critical]["preStop"], at[normal]["TERM"])
	}
	if el := at[critical]["TERM"] - at[critical]["preStop"]; el > 8.5 {
		t.Errorf("critical pod's SIGTERM %.2fs after its preStop, want within its group's 8s", el)
	}
}

func stoppedForShutdown(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodFailed && p.Status.Reason == shutdownReason && p.Status.Message == shutdownMessage
}

// TestGracefulNodeShutdown: against a logind stand-in on a private bus,
// podvisor holds a delay lock; at a power-off announcement it stops the
// normal pod, then the critical one, each with its preStop hook and
// within its group's period, and the pods say why (kubelet's status)
// while the node reports it is shutting down; a power-off cancelled
// during the critical pod's stop starts both again, with no restart
// counted, and the lock is taken again, and again from a restarted
// logind. A reboot is the same
// signal: both pods are stopped in order, the lock released long before
// logind's bound; after the "reboot" the pods run again with no restart
// counted.
func TestGracefulNodeShutdown(t *testing.T) {
	t.Parallel()
	bus := startBus(t)
	ld := startLogind(t, bus, 30*time.Second)
	// 8s per group: the pods' own 20s are cut to it.
	d := newDaemon(t, "--shutdown-grace-period", "16s", "--shutdown-grace-period-critical-pods", "8s")
	d.env = []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus}
	d.start()
	if l := ld.next("inhibit ", 20*time.Second); !strings.Contains(l, "what=shutdown who=podvisor") || !strings.Contains(l, "mode=delay") {
		t.Fatalf("lock taken: %s, want a delay lock on shutdown by podvisor", l)
	}
	normal, critical, logs := writeShutdownPods(d)
	mains := func(log string) int {
		order, _ := stamps(t, log, 0)
		n := 0
		for _, w := range order {
			if w == "main" {
				n++
			}
		}
		return n
	}
	// waitMain waits for both pods to run, each having started its
	// container at least want[name] times in all (the trap set).
	waitMain := func(what string, want map[string]int) {
		for name, log := range logs {
			d.waitPod(name, 60*time.Second, what, running)
			d.poll(name+"'s trap set", 20*time.Second, func() (bool, string) {
				n := mains(log)
				return n >= want[name], fmt.Sprintf("%d starts, want %d", n, want[name])
			})
		}
	}
	waitMain("Running", map[string]int{normal: 1, critical: 1})
	client := api.NewClient(d.sock)

	// A power-off, cancelled while the critical pod still runs.
	ld.send("shutdown")
	ld.next("prepare shutdown", 5*time.Second)
	d.waitPod(normal, 20*time.Second, "stopped for the shutdown", stoppedForShutdown)
	if err := client.Healthz(context.Background()); err == nil || !strings.Contains(err.Error(), shutdownNode) {
		t.Errorf("healthz while shutting down: %v, want %q", err, shutdownNode)
	}
	checkNodeReady(t, client, errors.New(shutdownNode))
	// Cancelled while the critical pod's stop is under way (its preStop
	// hook has begun): that stop finishes, then both pods start again.
	d.poll("the critical pod's preStop hook", 20*time.Second, func() (bool, string) {
		order, _ := stamps(t, logs[critical], 0)
		return slices.Contains(order, "preStop"), fmt.Sprint(order)
	})
	ld.send("cancel")
	if l := ld.next("inhibit ", 30*time.Second); !strings.Contains(l, "who=podvisor") {
		t.Errorf("lock after the cancel: %s", l)
	}
	waitMain("Running again after the cancelled shutdown", map[string]int{normal: 2, critical: 2})
	for name := range logs {
		if p, _ := d.pod(name); containerStatus(p, "main").RestartCount != 0 {
			t.Errorf("%s: restartCount %d after a cancelled shutdown, want 0", name, containerStatus(p, "main").RestartCount)
		}
	}
	if err := client.Healthz(context.Background()); err != nil {
		t.Errorf("healthz after the cancel: %v", err)
	}
	checkNodeReady(t, client, nil)

	// logind restarts: podvisor takes a lock from the new one.
	ld.quit()
	ld = startLogind(t, bus, 30*time.Second)
	if l := ld.next("inhibit ", 20*time.Second); !strings.Contains(l, "who=podvisor") {
		t.Errorf("lock from the restarted logind: %s", l)
	}

	// A reboot: the same signal.
	from := map[string]int{}
	for name, log := range logs {
		from[name] = lineCount(log)
	}
	start := uptime(t)
	ld.send("reboot")
	proceed := ld.next("proceed ", 30*time.Second)
	if !strings.HasPrefix(proceed, "proceed released") {
		t.Errorf("logind went on with %q, want the lock released before its 30s bound", proceed)
	}
	checkStoppedInOrder(t, d, logs, from, "reboot", "preStop TERM", start)

	// Nothing is left for systemd's last stage to wait on (k3s#2400).
	d.poll("no shim left after the pods stopped", 15*time.Second, func() (bool, string) {
		n := shimCount(d.ns)
		return n == 0, fmt.Sprintf("%d shims", n)
	})

	// The reboot: podvisor stops, every task goes, the run dir is cleared.
	d.stop(syscall.SIGTERM)
	ctx := context.Background()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctrs, _ := cl.Containers(ctx)
	for _, c := range ctrs {
		if task, err := c.Task(ctx, nil); err == nil {
			task.Delete(ctx, containerd.WithProcessKill)
		}
	}
	for _, m := range mountsUnder(d.run) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(d.run); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for name, log := range logs {
		want[name] = mains(log) + 1
	}
	d.start()
	waitMain("Running after the reboot", want)
	for name := range logs {
		if p, _ := d.pod(name); containerStatus(p, "main").RestartCount != 0 {
			t.Errorf("%s: restartCount %d after a graceful reboot, want 0 (the stop was no crash)", name, containerStatus(p, "main").RestartCount)
		}
	}
}

// checkNodeReady checks that GET /node's Ready condition is the one the
// mirrored Node gets from the same health (status.NodeReady, which the
// mirror's tests hold to kubelet's reasons): NotReady, KubeletNotReady and
// "node is shutting down" while the node shuts down.
func checkNodeReady(t *testing.T, client *api.Client, health error) {
	t.Helper()
	n, err := client.Node(context.Background())
	if err != nil {
		t.Errorf("GET /node: %v", err)
		return
	}
	want := status.NodeReady(health)
	for _, c := range n.Conditions {
		if c.Type == v1.NodeReady {
			if c.Status != want.Status || c.Reason != want.Reason || c.Message != want.Message {
				t.Errorf("GET /node: Ready %s/%s %q, want %s/%s %q (the mirrored Node's)", c.Status, c.Reason, c.Message, want.Status, want.Reason, want.Message)
			}
			return
		}
	}
	t.Errorf("GET /node: no Ready condition in %+v", n.Conditions)
}
