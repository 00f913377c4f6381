package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
)

// hostnamePod prints its hostname (the pod's name, "<name>-<node>") and
// sleeps.
const hostnamePod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo hostname=$(cat /etc/hostname); exec sleep 3600"]
`

// startWith runs podvisor with args and extra environment, as start does,
// without waiting for its API.
func (d *daemon) startWith(environ []string, args []string) {
	d.t.Helper()
	logf, err := os.OpenFile(d.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	d.cmd = exec.Command(podvisorBin, args...)
	d.cmd.Env = append(os.Environ(), environ...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	logf.Close()
	d.exited = make(chan error, 1)
	cmd := d.cmd
	go func() { d.exited <- cmd.Wait() }()
}

// withoutFlags is args without the flags named (each with its value).
func withoutFlags(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if slices.Contains(names, args[i]) {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// notifySocket binds a datagram socket as systemd does (an abstract one)
// and returns its address and a reader of the next datagram's lines.
func notifySocket(t *testing.T, d *daemon) (string, func() []string) {
	t.Helper()
	addr := "@podvisor-e2e-notify-" + randHex(8)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return addr, func() []string {
		t.Helper()
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(60 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no sd_notify datagram: %v\n%s", err, d.logTail())
		}
		return strings.Split(strings.TrimSuffix(string(buf[:n]), "\n"), "\n")
	}
}

// READY=1 comes only once the first sync is done: at that moment the
// manifest's pod is listed by the API (its worker has published it; its
// sandbox may still be being made, since READY=1 must not wait for a slow
// CNI plugin or image import past systemd's start timeout). STATUS= lines
// come before it, WATCHDOG=1 pings after, STOPPING=1 at the end.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.writeManifest("sleeper.yaml", fmt.Sprintf(hostnamePod, "sleeper"))
	addr, read := notifySocket(t, d)
	// A 1 s watchdog: a ping every 500 ms.
	d.startWith([]string{"NOTIFY_SOCKET=" + addr, "WATCHDOG_USEC=1000000"}, d.args())

	var statuses []string
	var ready []string
	for ready == nil {
		lines := read()
		for _, l := range lines {
			if s, ok := strings.CutPrefix(l, "STATUS="); ok {
				statuses = append(statuses, s)
			}
		}
		if slices.Contains(lines, "READY=1") {
			ready = lines
		}
	}
	// Right now, before anything else can happen: the pod is there.
	list, err := api.NewClient(d.sock).Pods(context.Background())
	if err != nil {
		t.Fatalf("API at READY=1: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "sleeper-"+node {
		t.Fatalf("at READY=1 the API lists %d pods, want sleeper-%s", len(list.Items), node)
	}
	t.Logf("statuses before READY=1: %q; READY=1 with %q", statuses, ready)
	for _, want := range []string{"starting", "waiting for containerd", "syncing pods"} {
		if !slices.Contains(statuses, want) {
			t.Errorf("no STATUS=%s before READY=1 (got %q)", want, statuses)
		}
	}
	if !slices.ContainsFunc(ready, func(l string) bool { return strings.HasPrefix(l, "STATUS=1 pod: ") }) {
		t.Errorf("READY=1 came without the pods' STATUS: %q", ready)
	}

	// Pings, and the pods' summary once the pod runs.
	pings, running := 0, false
	for pings < 3 || !running {
		for _, l := range read() {
			switch {
			case l == "WATCHDOG=1":
				pings++
			case l == "STATUS=1 pod: 1 running, 0 pending, 0 failed":
				running = true
			}
		}
	}

	// Stopping: remove the pod first, so podvisor stops nothing it owns.
	d.removeManifest("sleeper.yaml")
	d.waitGone("sleeper", 60*time.Second)
	d.cmd.Process.Signal(syscall.SIGTERM)
	for stopping := false; !stopping; {
		stopping = slices.Contains(read(), "STOPPING=1")
	}
	d.waitExit()
}

// The configuration file's values take effect, and a flag given beside it
// wins over the file.
func TestConfigFile(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.writeManifest("named.yaml", fmt.Sprintf(hostnamePod, "named"))
	cfg := filepath.Join(d.dir, "podvisor.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: podvisor.io/v1alpha1
kind: PodvisorConfiguration
# from the file only
manifests: %s
nodeName: fromfile
# overridden by --log-level debug
logLevel: error
`, d.manifests)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(withoutFlags(d.args(), "--manifests", "--node-name"), "--config", cfg)
	if !slices.Contains(args, "--log-level") {
		t.Fatal("the harness no longer passes --log-level")
	}

	// What config view says podvisor run will use.
	out, err := exec.Command(podvisorBin, append([]string{"config", "view"}, args[1:]...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("config view: %v\n%s", err, out)
	}
	for _, want := range []string{"\nmanifests: " + d.manifests + "\n", "\nnodeName: fromfile\n", "\nlogLevel: debug\n", "\ncontainerdNamespace: " + d.ns + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("config view lacks %q:\n%s", want, out)
		}
	}

	d.startWith(nil, args)
	c := api.NewClient(d.sock)
	d.poll("podvisor API to answer", 30*time.Second, func() (bool, string) {
		err := c.Healthz(context.Background())
		return err == nil, fmt.Sprint(err)
	})
	p := d.waitPod("named-fromfile", 60*time.Second, "running", func(p *v1.Pod) bool { return running(p) })
	if p.Spec.NodeName != "fromfile" {
		t.Errorf("spec.nodeName %q, want fromfile from the file", p.Spec.NodeName)
	}
	// Inside the container: the pod's hostname is "<name>-<node>".
	logPath := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", p.Name, p.UID), "main", "0.log")
	d.poll("the container's hostname in its log", 20*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "hostname=named-fromfile\n"), string(b)
	})
	// --log-level debug beat the file's error.
	d.waitLogLine("level=DEBUG")

	// A bad file: podvisor does not start, and says where.
	bad := filepath.Join(d.dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nmanifest: /x\n"), 0o644)
	out, err = exec.Command(podvisorBin, "run", "--config", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), bad+":3: manifest: unknown key") {
		t.Errorf("run with a bad file: %v\n%s", err, out)
	}
}
