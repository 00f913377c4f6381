package supervise

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Embedded runs podvisor's private containerd (--embedded-containerd): own
// socket under the run dir, own root under the state dir, CRI off. The
// daemon runs in its own session and cgroup, so neither a signal to
// podvisor's process group nor `systemctl restart podvisor` reaches it; a
// restarted podvisor finds it through its pid file and keeps using it. If
// it dies, Embedded starts it again.
type Embedded struct {
	// Binary is the containerd executable (default "containerd" in PATH).
	Binary   string
	RunDir   string
	StateDir string
	// Cgroup is the cgroup (relative to each hierarchy) the daemon is moved
	// into, out of podvisor's own; default "podvisor-containerd".
	Cgroup string
	Log    *slog.Logger
}

func (e *Embedded) dir() string { return filepath.Join(e.RunDir, "containerd") }

// Address is the daemon's socket.
func (e *Embedded) Address() string { return filepath.Join(e.dir(), "containerd.sock") }

func (e *Embedded) pidFile() string { return filepath.Join(e.dir(), "containerd.pid") }

// ContainerdConfig renders a containerd config.toml (version 2, which 2.x
// still reads) with root, state and sockets in the given places and the
// CRI plugins (and snapshotters that only log errors) disabled.
func ContainerdConfig(root, state, address, optDir string, major int) string {
	disabled := []string{
		"io.containerd.grpc.v1.cri",
		"io.containerd.snapshotter.v1.aufs",
		"io.containerd.snapshotter.v1.btrfs",
		"io.containerd.snapshotter.v1.devmapper",
		"io.containerd.snapshotter.v1.zfs",
	}
	if major >= 2 {
		disabled = append(disabled, "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime")
	}
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "version = 2\nroot = %s\nstate = %s\n", q(root), q(state))
	for i := range disabled {
		disabled[i] = q(disabled[i])
	}
	fmt.Fprintf(&b, "disabled_plugins = [%s]\n\n", strings.Join(disabled, ", "))
	fmt.Fprintf(&b, "[grpc]\n  address = %s\n\n[ttrpc]\n  address = %s\n\n", q(address), q(address+".ttrpc"))
	fmt.Fprintf(&b, "[plugins.%s]\n  path = %s\n", q("io.containerd.internal.v1.opt"), q(optDir))
	return b.String()
}

// ContainerdMajor returns the major version of a containerd binary (1 when
// it cannot tell).
func ContainerdMajor(bin string) int {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return 1
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return 1
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(f[2], "v"), ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 1
	}
	return n
}

// Run makes sure the daemon runs until ctx ends, restarting it when it
// dies. ready is closed once a daemon (started or found) is up. Run never
// stops the daemon: pods outlive podvisor.
func (e *Embedded) Run(ctx context.Context, ready chan<- struct{}) error {
	if e.Binary == "" {
		e.Binary = "containerd"
	}
	bin, err := exec.LookPath(e.Binary)
	if err != nil {
		return fmt.Errorf("embedded containerd: %w", err)
	}
	e.Binary = bin
	readyOnce := false
	for {
		pid := e.alivePID()
		if pid == 0 {
			pid, err = e.start()
			if err != nil {
				e.Log.Error("start embedded containerd", "err", err)
			} else {
				e.Log.Info("started embedded containerd", "pid", pid, "address", e.Address())
			}
		} else if !readyOnce {
			e.Log.Info("using running embedded containerd", "pid", pid, "address", e.Address())
		}
		if pid != 0 && !readyOnce {
			readyOnce = true
			close(ready)
		}
		// Poll for the daemon's death: it may not be our child (found
		// from a previous podvisor), so waitpid is not always possible.
		t := time.NewTicker(time.Second)
	watch:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
				if pid == 0 || !processAlive(pid) {
					break watch
				}
			}
		}
		t.Stop()
		if pid != 0 {
			e.Log.Warn("embedded containerd died; restarting it", "pid", pid)
		}
	}
}

// alivePID returns the pid of a running daemon from the pid file, or 0.
func (e *Embedded) alivePID() int {
	b, err := os.ReadFile(e.pidFile())
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !processAlive(pid) {
		return 0
	}
	// The pid may have been reused (a shim, say): it must be our binary
	// running our config.
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	want, err := filepath.EvalSymlinks(e.Binary)
	if err != nil {
		want = e.Binary
	}
	if strings.TrimSuffix(exe, " (deleted)") != want || !strings.Contains(string(cmd), filepath.Join(e.dir(), "config.toml")) {
		return 0
	}
	return pid
}

func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie child is dead for our purpose.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func (e *Embedded) start() (int, error) {
	root := filepath.Join(e.StateDir, "containerd")
	for _, d := range []string{e.dir(), root} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return 0, err
		}
	}
	cfg := filepath.Join(e.dir(), "config.toml")
	conf := ContainerdConfig(root, filepath.Join(e.dir(), "state"), e.Address(), filepath.Join(root, "opt"), ContainerdMajor(e.Binary))
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(filepath.Join(root, "containerd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	os.Remove(e.Address())
	cmd := exec.Command(e.Binary, "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: signals to podvisor's process group (Ctrl-C,
	// kill -9 -PGID) do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// The shim of the embedded containerd must be the one beside it.
	cmd.Env = PrependPath(os.Environ(), filepath.Dir(e.Binary))
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", e.Binary, err)
	}
	pid := cmd.Process.Pid
	// Reap it if it dies while we run; after we exit, init does.
	go cmd.Wait()
	if err := os.WriteFile(e.pidFile(), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return pid, err
	}
	e.moveToCgroup(pid)
	return pid, nil
}

// moveToCgroup puts the daemon in its own cgroup in every hierarchy, so a
// service manager stopping podvisor's cgroup does not stop it.
func (e *Embedded) moveToCgroup(pid int) {
	name := e.Cgroup
	if name == "" {
		name = "podvisor-containerd"
	}
	cg := detectCgroups("/sys/fs/cgroup")
	for _, d := range cg.dirs(name) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			e.Log.Debug("move embedded containerd to its cgroup", "cgroup", d, "err", err)
		}
	}
}

// PrependPath returns env with dir first in PATH.
func PrependPath(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + dir + ":" + v
			found = true
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, "PATH="+dir+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	return out
}
