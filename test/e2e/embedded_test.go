package e2e

import (
	"fmt"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	v1 "k8s.io/api/core/v1"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEmbeddedContainerd: --embedded-containerd starts a private daemon
// that runs pods, is restarted when it dies, and is found again (not
// started twice) by a restarted podvisor.
func TestEmbeddedContainerd(t *testing.T) {
	requireEnv(t)
	var readPID func() int
	lastPID := 0
	var cgroup string // the daemon's: <containerd-namespace>-containerd
	// Registered before the daemon's own cleanup so it runs after it:
	// podvisor removes the pod through the embedded daemon, then the test
	// stops the daemon it caused to start, and removes its cgroup once it
	// is gone.
	t.Cleanup(func() {
		if readPID != nil {
			readPID()
		}
		if lastPID != 0 {
			syscall.Kill(lastPID, syscall.SIGTERM)
			for deadline := time.Now().Add(10 * time.Second); processAlive(lastPID) && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
			}
		}
		if cgroup != "" {
			for _, dir := range cgroupfs.Dirs("/sys/fs/cgroup", cgroup) {
				cgroupfs.RemoveTree(dir)
			}
		}
	})
	d := newDaemon(t, "--embedded-containerd", "--containerd-binary", env.Containerd)
	cgroup = d.ns + "-containerd"
	// The private daemon's socket lives under the run dir; keep the path
	// short enough for a unix socket.
	d.start()
	pidFile := filepath.Join(d.run, "containerd", "containerd.pid")
	readPID = func() int {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if n != 0 {
			lastPID = n
		}
		return n
	}
	first := readPID()
	if first == 0 {
		t.Fatal("no embedded containerd pid file")
	}
	// The daemon is not in podvisor's process group, nor in its cgroup.
	if pgid, _ := syscall.Getpgid(first); pgid == d.cmd.Process.Pid {
		t.Error("embedded containerd shares podvisor's process group")
	}
	if cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", first)); !strings.Contains(string(cg), "/"+cgroup+"\n") {
		t.Errorf("embedded containerd is not in its own cgroup %s:\n%s", cgroup, cg)
	}
	d.writeManifest("app.yaml", sleeperManifest("app", 1, "sleep 3600"))
	p := d.waitPod("app-"+node, 60*time.Second, "Running", running)
	id := containerID(p, "main")

	// podvisor killed with its process group, restarted: same daemon.
	d.killGroup()
	if syscall.Kill(first, 0) != nil {
		t.Fatal("embedded containerd died with podvisor's process group")
	}
	d.start()
	if got := readPID(); got != first {
		t.Fatalf("restarted podvisor started another containerd: pid %d, was %d", got, first)
	}
	d.waitPod("app-"+node, 30*time.Second, "still Running", func(p2 *v1.Pod) bool {
		return running(p2) && containerID(p2, "main") == id
	})

	// The daemon dies: podvisor starts it again; the pod keeps running.
	syscall.Kill(first, syscall.SIGKILL)
	d.poll("a new embedded containerd", 30*time.Second, func() (bool, string) {
		n := readPID()
		return n != 0 && n != first && syscall.Kill(n, 0) == nil, "pid " + strconv.Itoa(n)
	})
	d.waitPod("app-"+node, 30*time.Second, "Running on the new daemon", func(p2 *v1.Pod) bool {
		return running(p2) && containerID(p2, "main") == id
	})

}

// TestWaitsForContainerd: without --embedded-containerd and without a
// containerd, podvisor waits with a clear message and starts none.
func TestWaitsForContainerd(t *testing.T) {
	requireEnv(t)
	dir := t.TempDir()
	cmd := exec.Command(podvisorBin, "run",
		"--manifests", filepath.Join(dir, "m"), "--state-dir", filepath.Join(dir, "s"),
		"--run-dir", filepath.Join(dir, "r"), "--log-dir", filepath.Join(dir, "l"),
		"--images-dir", filepath.Join(dir, "i"), "--containerd-address", filepath.Join(dir, "none.sock"))
	logf, err := os.Create(filepath.Join(dir, "podvisor.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := os.ReadFile(logf.Name())
		if strings.Contains(string(out), "waiting for containerd") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiting message:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, "r", "containerd")); err == nil {
		t.Error("podvisor made an embedded containerd dir without --embedded-containerd")
	}
}

// processAlive reports whether pid runs (a zombie counts as gone).
func processAlive(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(st)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
