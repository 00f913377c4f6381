package shutdown

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/podvisor/podvisor/test/syncbuf"
	"k8s.io/apimachinery/pkg/types"
)

func prepareSignal(sender string, active bool) *dbus.Signal {
	return &dbus.Signal{Sender: sender, Path: logindPath, Name: signalPrepare, Body: []any{active}}
}

func ownerSignal(sender, old, cur string) *dbus.Signal {
	return &dbus.Signal{Sender: sender, Path: busPath, Name: signalOwner, Body: []any{logindName, old, cur}}
}

// Only logind's unique name may announce a shutdown, only the bus may
// say logind's owner changed; a connection that sends either is forged,
// whether it broadcast the signal or addressed it to podvisor.
func TestClassify(t *testing.T) {
	const logind = ":1.7"
	for _, tc := range []struct {
		name   string
		s      *dbus.Signal
		logind string
		want   signalEvent
	}{
		{"logind announces", prepareSignal(logind, true), logind, signalEvent{kind: prepare, active: true}},
		{"logind cancels", prepareSignal(logind, false), logind, signalEvent{kind: prepare}},
		{"another connection announces", prepareSignal(":1.99", true), logind, signalEvent{kind: forged}},
		{"another connection cancels", prepareSignal(":1.99", false), logind, signalEvent{kind: forged}},
		{"a well-known name is no unique name", prepareSignal(logindName, true), logind, signalEvent{kind: forged}},
		{"no logind on the bus", prepareSignal(logind, true), "", signalEvent{kind: forged}},
		{"a former logind", prepareSignal(":1.3", true), logind, signalEvent{kind: forged}},
		{"logind at another path", &dbus.Signal{Sender: logind, Path: "/x", Name: signalPrepare, Body: []any{true}}, logind, signalEvent{kind: other}},
		{"logind, malformed", &dbus.Signal{Sender: logind, Path: logindPath, Name: signalPrepare, Body: []any{"yes"}}, logind, signalEvent{kind: other}},
		{"the bus: logind left", ownerSignal(busName, logind, ""), logind, signalEvent{kind: ownerChanged}},
		{"the bus: a new logind", ownerSignal(busName, "", ":1.8"), "", signalEvent{kind: ownerChanged, owner: ":1.8"}},
		{"a connection says logind left", ownerSignal(":1.99", logind, ""), logind, signalEvent{kind: forged}},
		{"a connection says it is logind", ownerSignal(":1.99", logind, ":1.99"), logind, signalEvent{kind: forged}},
		{"logind says it left", ownerSignal(logind, logind, ""), logind, signalEvent{kind: forged}},
		{"the bus's name at another path", &dbus.Signal{Sender: busName, Path: "/x", Name: signalOwner, Body: []any{logindName, logind, ""}}, logind, signalEvent{kind: forged}},
		{"another name's owner", &dbus.Signal{Sender: busName, Path: busPath, Name: signalOwner, Body: []any{"org.example", "", ":1.5"}}, logind, signalEvent{kind: other}},
		{"another signal", &dbus.Signal{Sender: ":1.99", Path: logindPath, Name: logindManager + ".SessionNew", Body: []any{"1", dbus.ObjectPath("/s")}}, logind, signalEvent{kind: other}},
	} {
		if got := classify(tc.s, tc.logind); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// fakeBus is a logindConn whose signals the test sends; its locks are
// pipes whose release it sees.
type fakeBus struct {
	signals chan *dbus.Signal

	mu        sync.Mutex
	owner     string
	preparing bool
	held      int           // locks taken and not released
	asked     chan string   // PreparingForShutdown's callers, by the owner asked
	changed   chan struct{} // a lock was taken or released
}

func newFakeBus(owner string) *fakeBus {
	return &fakeBus{signals: make(chan *dbus.Signal, 16), owner: owner, asked: make(chan string, 16), changed: make(chan struct{}, 16)}
}

func (f *fakeBus) Signals() <-chan *dbus.Signal { return f.signals }

func (f *fakeBus) LogindOwner(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.owner, nil
}

func (f *fakeBus) PreparingForShutdown(_ context.Context, owner string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked <- owner
	if owner != f.owner {
		return false, errors.New("no such name")
	}
	return f.preparing, nil
}

func (f *fakeBus) InhibitDelay(context.Context) (time.Duration, error) { return time.Minute, nil }

func (f *fakeBus) Inhibit(context.Context) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.held++
	f.mu.Unlock()
	f.changed <- struct{}{}
	go func() {
		io.Copy(io.Discard, r)
		r.Close()
		f.mu.Lock()
		f.held--
		f.mu.Unlock()
		f.changed <- struct{}{}
	}()
	return w, nil
}

func (f *fakeBus) Close() {}

func (f *fakeBus) locks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

func (f *fakeBus) setPreparing(v bool) {
	f.mu.Lock()
	f.preparing = v
	f.mu.Unlock()
}

// waitLocks waits until n locks are held.
func (f *fakeBus) waitLocks(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for f.locks() != n {
		select {
		case <-f.changed:
		case <-deadline:
			t.Fatalf("%d locks held, want %d", f.locks(), n)
		}
	}
}

// waitAsked waits for the Manager to ask owner whether it prepares for a
// shutdown: every signal sent before the one that made it ask has been
// handled by then.
func (f *fakeBus) waitAsked(t *testing.T, owner string) {
	t.Helper()
	select {
	case got := <-f.asked:
		if got != owner {
			t.Fatalf("PreparingForShutdown asked of %s, want %s", got, owner)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("PreparingForShutdown never asked of %s", owner)
	}
}

// startSession runs one session of a Manager on f, with one pod to stop.
func startSession(t *testing.T, f *fakeBus) (*Manager, *fakeStopper, *syncbuf.Buffer) {
	t.Helper()
	pods := []Pod{{UID: "p", Name: "pod", Priority: 0, Grace: time.Second}}
	stopper := &fakeStopper{ended: map[string]time.Time{}, graces: map[string]time.Duration{}, names: map[types.UID]string{"p": "pod"}}
	periods, _ := FromTotal(2*time.Second, time.Second)
	var log syncbuf.Buffer
	m := New(Options{Periods: periods, Pods: func() []Pod { return pods }, Stopper: stopper, Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	m.dial = func(context.Context, string) (logindConn, error) { return f, nil }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.session(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done; m.wg.Wait() })
	f.waitLocks(t, 1)
	return m, stopper, &log
}

func (f *fakeStopper) stops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.started...)
}

// A PrepareForShutdown or a NameOwnerChanged about logind that another
// connection sends stops nothing and keeps the lock; logind's own
// announcement counts only once its PreparingForShutdown confirms it.
func TestSessionForgedSignals(t *testing.T) {
	const logind = ":1.1"
	f := newFakeBus(logind)
	m, stopper, log := startSession(t, f)

	f.signals <- prepareSignal(":1.66", true)
	f.signals <- prepareSignal(":1.66", true)
	f.signals <- ownerSignal(":1.66", logind, "")
	f.signals <- ownerSignal(":1.67", logind, ":1.67")
	f.signals <- prepareSignal(":1.67", true)
	// logind's own announcement, not confirmed (PreparingForShutdown is
	// false): the Manager asks, after handling every signal before it.
	f.signals <- prepareSignal(logind, true)
	f.waitAsked(t, logind)
	if s := stopper.stops(); len(s) != 0 {
		t.Errorf("pods stopped for forged or unconfirmed signals: %q", s)
	}
	if err := m.Status(); err != nil {
		t.Errorf("status after forged signals: %v, want nil", err)
	}
	if n := f.locks(); n != 1 {
		t.Errorf("%d locks held after a forged NameOwnerChanged, want 1", n)
	}
	out := log.String()
	if n := strings.Count(out, "level=WARN msg=\"graceful node shutdown: forged signal ignored"); n != 2 {
		t.Errorf("%d forged-signal warnings, want one per sender (2):\n%s", n, out)
	}
	if !strings.Contains(out, "logind does not confirm") {
		t.Errorf("no warning for the unconfirmed announcement:\n%s", out)
	}

	// Confirmed: the pod is stopped and the lock released.
	f.setPreparing(true)
	f.signals <- prepareSignal(logind, true)
	f.waitAsked(t, logind)
	f.waitLocks(t, 0)
	if s := stopper.stops(); len(s) != 1 || s[0] != "pod" {
		t.Errorf("stops %q after logind's confirmed announcement, want the pod", s)
	}
	if !errors.Is(m.Status(), ErrShuttingDown) {
		t.Errorf("status = %v, want %v", m.Status(), ErrShuttingDown)
	}
}

// When the bus says logind has a new owner, the Manager takes a lock from
// it and listens to it alone: the former owner's announcement is forged.
func TestSessionLogindRestarts(t *testing.T) {
	f := newFakeBus(":1.1")
	m, stopper, _ := startSession(t, f)

	f.signals <- ownerSignal(busName, ":1.1", "")
	f.waitLocks(t, 0)
	f.mu.Lock()
	f.owner = ":1.2" // the bus's own record, before it announces it
	f.mu.Unlock()
	f.signals <- ownerSignal(busName, "", ":1.2")
	f.waitLocks(t, 1)
	f.setPreparing(true)
	f.signals <- prepareSignal(":1.1", true)
	f.signals <- prepareSignal(":1.2", true)
	f.waitAsked(t, ":1.2")
	f.waitLocks(t, 0)
	if s := stopper.stops(); len(s) != 1 {
		t.Errorf("stops %q, want the pod once", s)
	}
	if !errors.Is(m.Status(), ErrShuttingDown) {
		t.Errorf("status = %v, want %v", m.Status(), ErrShuttingDown)
	}
}
