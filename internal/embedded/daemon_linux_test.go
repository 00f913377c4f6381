package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
	"golang.org/x/sys/unix"
)

// fakeEnv makes the test binary act as containerd: it answers --version
// and otherwise stays up until killed (a minute at most, so a test that
// dies leaves nothing behind for long).
const fakeEnv = "PODVISOR_TEST_FAKE_CONTAINERD"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		if len(os.Args) > 1 && os.Args[1] == "--version" {
			fmt.Println("containerd github.com/containerd/containerd/v2 v2.1.4 fake")
			os.Exit(0)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// waits records the back-off waits a Daemon asks for, without waiting.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) get() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.d)
}

// steadyBackoff is 1 s doubling to 8 s without jitter, so the waits are
// known.
func steadyBackoff() *backoff.Backoff {
	return &backoff.Backoff{Initial: time.Second, Max: 8 * time.Second}
}

// fakeDaemon returns a Daemon running the test binary as containerd, with
// a fake cgroup v2 tree, and kills every daemon it started when the test
// ends.
func fakeDaemon(t *testing.T, run, state, cgroups string) (*Daemon, *waits) {
	t.Helper()
	t.Setenv(fakeEnv, "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Binary: self, RunDir: run, StateDir: state, CgroupRoot: cgroups, Backoff: steadyBackoff()})
	w := &waits{}
	d.check, d.sleep = 10*time.Millisecond, w.sleep
	return d, w
}

// run runs d until the returned stop is called (or the test ends), and
// waits for Ready.
func run(t *testing.T, d *Daemon) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil once its context ended", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	t.Cleanup(stop)
	select {
	case <-d.Ready():
	case err := <-done:
		t.Fatalf("Run returned %v before Ready", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Ready not closed")
	}
	return stop
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func readPID(t *testing.T, d *Daemon) int {
	t.Helper()
	b, err := os.ReadFile(d.pidFile())
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func killLater(t *testing.T, pid int) {
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
}

func TestDaemonStartsFindsAndRestarts(t *testing.T) {
	run1, state, cgroups := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(cgroups, "cgroup.controllers"), []byte("cpu memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _ := fakeDaemon(t, run1, state, cgroups)
	stop := run(t, d)
	first := readPID(t, d)
	if first == 0 || !processAlive(first) {
		t.Fatalf("no running daemon after Ready (pid file says %d)", first)
	}
	killLater(t, first)
	if d.Address() != filepath.Join(run1, "containerd", "containerd.sock") {
		t.Errorf("Address = %s", d.Address())
	}
	conf, err := os.ReadFile(filepath.Join(run1, "containerd", "config.toml"))
	if err != nil || !strings.Contains(string(conf), strconv.Quote(d.Address())) || !strings.Contains(string(conf), "io.containerd.cri.v1.images") {
		t.Errorf("config.toml (%v) lacks the socket or the 2.x plugins:\n%s", err, conf)
	}
	if sid, _ := unix.Getsid(first); sid != first {
		t.Errorf("daemon's session is %d, want its own (%d)", sid, first)
	}
	if procs, _ := os.ReadFile(filepath.Join(cgroups, DefaultCgroup, "cgroup.procs")); string(procs) != strconv.Itoa(first) {
		t.Errorf("cgroup.procs = %q, want the daemon's pid %d", procs, first)
	}

	// A stopped Run leaves the daemon running; the next one finds it.
	stop()
	if !processAlive(first) {
		t.Fatal("the daemon died with Run")
	}
	d2, waits := fakeDaemon(t, run1, state, cgroups)
	run(t, d2)
	if got := readPID(t, d2); got != first {
		t.Fatalf("a second Run started pid %d instead of using %d", got, first)
	}

	// The daemon dies: a new one starts, after a back-off that grows
	// while it keeps dying.
	prev := first
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		syscall.Kill(prev, syscall.SIGKILL)
		eventually(t, fmt.Sprintf("restart %d", i+1), func() bool {
			n := readPID(t, d2)
			return n != prev && n != 0 && processAlive(n)
		})
		prev = readPID(t, d2)
		killLater(t, prev)
		if got := waits.get(); len(got) != i+1 || got[i] != want {
			t.Errorf("waits before restarts = %v, want the %dth to be %v", got, i+1, want)
		}
	}
}

func TestDaemonRetriesFailedStarts(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "containerd")
	if err := os.WriteFile(bin, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := New(Options{Binary: bin, RunDir: t.TempDir(), StateDir: t.TempDir(), CgroupRoot: t.TempDir(), Backoff: steadyBackoff()})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := &waits{}
	d.sleep = func(ctx context.Context, dur time.Duration) error {
		if len(w.get()) == 4 {
			cancel()
		}
		return w.sleep(ctx, dur)
	}
	if err := d.Run(ctx); err != nil {
		t.Fatalf("Run = %v, want nil once its context ended", err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	if got := w.get(); !slices.Equal(got, want) {
		t.Errorf("waits between failed starts = %v, want %v", got, want)
	}
	select {
	case <-d.Ready():
		t.Error("Ready closed though no daemon ever started")
	default:
	}
}

func TestDaemonWithoutBinary(t *testing.T) {
	d := New(Options{Binary: filepath.Join(t.TempDir(), "containerd"), RunDir: t.TempDir(), StateDir: t.TempDir()})
	if err := d.Run(t.Context()); err == nil {
		t.Error("Run without a binary returned nil, want an error")
	}
}

func TestAlivePIDRejectsStrangers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Binary: self, RunDir: t.TempDir(), StateDir: t.TempDir()})
	d.bin = self
	if err := os.MkdirAll(filepath.Dir(d.pidFile()), 0o755); err != nil {
		t.Fatal(err)
	}
	for what, content := range map[string]string{
		"this test: the binary, but not the config": strconv.Itoa(os.Getpid()),
		"init: another binary":                      "1",
		"garbage":                                   "no pid",
		"a dead pid":                                strconv.Itoa(1 << 30),
	} {
		if err := os.WriteFile(d.pidFile(), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := d.alivePID(); got != 0 {
			t.Errorf("%s: alivePID = %d, want 0", what, got)
		}
	}
}
