package embedded

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

	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/internal/layout"
)

const (
	// DefaultCgroup is Options.Cgroup's default.
	DefaultCgroup = "podvisor-containerd"
	// DefaultRestartMax is the longest wait before a restart under the
	// default back-off.
	DefaultRestartMax = 30 * time.Second
	// checkPeriod is how often a daemon podvisor did not start (found from
	// a previous podvisor, so not its child) is checked for death.
	checkPeriod = time.Second
)

// Options configures a Daemon. A zero field takes the default its comment
// names.
type Options struct {
	// Binary is the containerd executable; default "containerd" in PATH.
	// The shim beside it is found first.
	Binary string
	// RunDir and StateDir are podvisor's: the daemon's files go into
	// layout.ContainerdDir and layout.ContainerdRoot of them.
	RunDir, StateDir string
	// Cgroup is the cgroup (relative to each hierarchy) the daemon is moved
	// into, out of podvisor's own; default DefaultCgroup.
	Cgroup string
	// CgroupRoot is where the cgroup hierarchies are mounted; default
	// /sys/fs/cgroup.
	CgroupRoot string
	// Log hears starts, deaths and failures; nil discards.
	Log *slog.Logger
	// Backoff paces restarts of a daemon that died or failed to start; nil
	// means backoff.Retry(time.Now, DefaultRestartMax).
	Backoff *backoff.Backoff
}

// Daemon is the embedded containerd; see the package documentation.
type Daemon struct {
	opts  Options
	paths layout.Layout
	log   *slog.Logger
	ready chan struct{}

	bin   string                                     // Binary, resolved by Run
	check time.Duration                              // checkPeriod; tests shorten it
	sleep func(context.Context, time.Duration) error // backoff.Wait; tests record
}

// New returns a Daemon configured by opts, with its defaults applied. It
// starts nothing: Run does.
func New(opts Options) *Daemon {
	if opts.Binary == "" {
		opts.Binary = "containerd"
	}
	if opts.Cgroup == "" {
		opts.Cgroup = DefaultCgroup
	}
	if opts.CgroupRoot == "" {
		opts.CgroupRoot = "/sys/fs/cgroup"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff == nil {
		opts.Backoff = backoff.Retry(time.Now, DefaultRestartMax)
	}
	return &Daemon{
		opts:  opts,
		paths: layout.Layout{StateDir: opts.StateDir, RunDir: opts.RunDir},
		log:   opts.Log,
		ready: make(chan struct{}),
		check: checkPeriod,
		sleep: backoff.Wait,
	}
}

// Address is the daemon's socket.
func (d *Daemon) Address() string { return filepath.Join(d.paths.ContainerdDir(), "containerd.sock") }

func (d *Daemon) pidFile() string { return filepath.Join(d.paths.ContainerdDir(), "containerd.pid") }

func (d *Daemon) configFile() string { return filepath.Join(d.paths.ContainerdDir(), "config.toml") }

// Ready is closed once a daemon, started or found running, is up.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Run makes sure the daemon runs until ctx ends, starting it again after
// a back-off when it dies or fails to start. It returns nil when ctx ends,
// and an error only when there is no binary to run. Run never stops the
// daemon. It is called once.
func (d *Daemon) Run(ctx context.Context) error {
	bin, err := exec.LookPath(d.opts.Binary)
	if err != nil {
		return fmt.Errorf("embedded containerd: %w", err)
	}
	d.bin = bin
	readied := false
	for {
		pid, exited := d.alivePID(), (<-chan struct{})(nil)
		switch {
		case pid != 0:
			if !readied {
				d.log.Info("using running embedded containerd", "pid", pid, "address", d.Address())
			}
		default:
			// A daemon may run even though start failed (its pid file
			// could not be written): it is watched all the same.
			pid, exited, err = d.start()
			if err != nil {
				d.log.Error("start embedded containerd", "err", err)
			}
			if pid != 0 {
				d.log.Info("started embedded containerd", "pid", pid, "address", d.Address())
			}
		}
		if pid != 0 {
			if !readied {
				readied = true
				close(d.ready)
			}
			if !d.waitDeath(ctx, pid, exited) {
				return nil
			}
		}
		wait := d.opts.Backoff.Next()
		if pid != 0 {
			d.log.Warn("embedded containerd died; restarting it", "pid", pid, "in", wait)
		}
		if d.sleep(ctx, wait) != nil {
			return nil
		}
	}
}

// waitDeath waits until process pid is gone (exited, when not nil, is
// closed when it does) and reports whether it is, false when ctx ended
// first. A daemon found from a previous podvisor is not its child, so
// waitpid is not always possible: it is polled.
func (d *Daemon) waitDeath(ctx context.Context, pid int, exited <-chan struct{}) bool {
	t := time.NewTicker(d.check)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-exited:
			return true
		case <-t.C:
			if !processAlive(pid) {
				return true
			}
		}
	}
}

// alivePID returns the pid of a running daemon from the pid file, or 0.
func (d *Daemon) alivePID() int {
	b, err := os.ReadFile(d.pidFile())
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
	want, err := filepath.EvalSymlinks(d.bin)
	if err != nil {
		want = d.bin
	}
	if strings.TrimSuffix(exe, " (deleted)") != want || !strings.Contains(string(cmd), d.configFile()) {
		return 0
	}
	return pid
}

// processAlive reports whether pid runs; a zombie is dead for our purpose.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
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

// start writes the config and starts a daemon. exited is closed when it
// exits while podvisor runs.
func (d *Daemon) start() (pid int, exited <-chan struct{}, err error) {
	dir, root := d.paths.ContainerdDir(), d.paths.ContainerdRoot()
	for _, p := range []string{dir, root} {
		if err := os.MkdirAll(p, 0o711); err != nil {
			return 0, nil, err
		}
	}
	major := 1
	if v, err := Version(d.bin); err == nil {
		major = Major(v)
	}
	conf := Config(root, filepath.Join(dir, "state"), d.Address(), filepath.Join(root, "opt"), major)
	if err := os.WriteFile(d.configFile(), []byte(conf), 0o600); err != nil {
		return 0, nil, err
	}
	logf, err := os.OpenFile(filepath.Join(root, "containerd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, nil, err
	}
	defer logf.Close()
	os.Remove(d.Address())
	cmd := exec.Command(d.bin, "--config", d.configFile())
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: signals to podvisor's process group (Ctrl-C,
	// kill -9 -PGID) do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// The shim of the embedded containerd must be the one beside it.
	cmd.Env = PrependPath(os.Environ(), filepath.Dir(d.bin))
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("start %s: %w", d.bin, err)
	}
	pid = cmd.Process.Pid
	// Reap it if it dies while we run; after we exit, init does. This
	// goroutine outlives Run on purpose: the daemon does.
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if err := os.WriteFile(d.pidFile(), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return pid, done, err
	}
	d.moveToCgroup(pid)
	return pid, done, nil
}
