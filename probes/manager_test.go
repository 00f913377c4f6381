package probes

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// call is one run of a chanRunner, waiting for its answer.
type call struct {
	kind  Kind
	ctx   context.Context
	reply chan answer
}

// chanRunner hands each run to the test and waits for its answer.
type chanRunner struct{ calls chan *call }

func (r *chanRunner) run(ctx context.Context, kind Kind, _ *v1.Probe, _ Target) (outcome, string, error) {
	c := &call{kind: kind, ctx: ctx, reply: make(chan answer, 1)}
	select {
	case r.calls <- c:
	case <-ctx.Done():
		return outUnknown, "", ctx.Err()
	}
	select {
	case a := <-c.reply:
		return a.o, a.out, a.err
	case <-ctx.Done():
		return outUnknown, "", ctx.Err()
	}
}

// looper is a Manager running its workers on a fake clock.
type looper struct {
	t       *testing.T
	m       *Manager
	clock   *fakeClock
	r       *chanRunner
	jitters chan time.Duration // the n each Rand call got
	changes chan Change
	events  chan Event
}

func newLooper(t *testing.T, jitter time.Duration) *looper {
	l := &looper{t: t, clock: newFakeClock(), r: &chanRunner{calls: make(chan *call)},
		jitters: make(chan time.Duration, 10), changes: make(chan Change, 10), events: make(chan Event, 10)}
	o := Options{
		Clock:    l.clock,
		Rand:     func(n time.Duration) time.Duration { l.jitters <- n; return jitter },
		OnChange: func(c Change) { l.changes <- c },
		OnEvent:  func(e Event) { l.events <- e },
	}
	l.m = newManager(o, l.r)
	l.m.dispatching = true
	go l.m.dispatch()
	t.Cleanup(l.m.Close)
	return l
}

func (l *looper) expectCall(kind Kind) *call {
	l.t.Helper()
	select {
	case c := <-l.r.calls:
		if c.kind != kind {
			l.t.Fatalf("a %v run, want %v", c.kind, kind)
		}
		return c
	case <-time.After(5 * time.Second):
		l.t.Fatalf("no %v run", kind)
		return nil
	}
}

func (l *looper) noCall() {
	l.t.Helper()
	select {
	case c := <-l.r.calls:
		l.t.Fatalf("an unexpected %v run", c.kind)
	default:
	}
}

// parked waits until the workers wait for one timer, due in d.
func (l *looper) parked(d time.Duration) {
	l.t.Helper()
	eventually(l.t, "a worker waiting for its next run", func() bool {
		in, ok := l.clock.NextIn()
		return ok && l.clock.Waiters() == 1 && in == d
	})
}

// noJitter fails the test if a jitter was asked for.
func (l *looper) noJitter() {
	l.t.Helper()
	select {
	case n := <-l.jitters:
		l.t.Fatalf("a jitter was asked for (within %v)", n)
	default:
	}
}

// The first run is due at the container's start plus initialDelaySeconds,
// to the nanosecond, then every periodSeconds from there.
func TestFirstRunAtStartPlusInitialDelay(t *testing.T) {
	l := newLooper(t, 3*time.Second)
	l.clock.Step(time.Minute) // the Manager runs since a while
	tg := target(&v1.Container{Name: "app", ReadinessProbe: &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 5,
	}})
	tg.StartedAt = l.clock.Now().Add(-2 * time.Second)
	l.m.Add(tg, Seed{})
	// initialDelaySeconds from StartedAt: 3s left.
	l.parked(3 * time.Second)
	l.clock.Step(3*time.Second - time.Nanosecond)
	l.parked(time.Nanosecond)
	l.noCall()
	if st := l.m.Status("uid-1", "app"); st.Ready || !st.Probes[Readiness].Time.IsZero() {
		t.Fatalf("a result before the initial delay: %+v", st)
	}
	l.clock.Step(time.Nanosecond)
	due := l.clock.Now()
	if !due.Equal(tg.StartedAt.Add(5 * time.Second)) {
		t.Fatalf("clock at %v, want start + 5s", due)
	}
	l.expectCall(Readiness).reply <- pass
	if c := <-l.changes; c.Kind != Readiness || c.Result != Success {
		t.Fatalf("change %+v", c)
	}
	// Then every period, counted from the first run's due time.
	l.parked(10 * time.Second)
	l.clock.Step(10 * time.Second)
	c := l.expectCall(Readiness)
	// A run that overruns its period is followed by the next at once.
	l.clock.Step(25 * time.Second)
	c.reply <- pass
	l.expectCall(Readiness).reply <- pass
	l.parked(10 * time.Second)
	l.noJitter()
}

// A container started after the Manager whose initial delay has passed
// when it is added is probed at once, without a jitter.
func TestOverdueFirstRunOfANewContainerRunsAtOnce(t *testing.T) {
	l := newLooper(t, 3*time.Second)
	l.clock.Step(time.Minute)
	spec := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, InitialDelaySeconds: 10, PeriodSeconds: 4}
	tg := target(&v1.Container{Name: "app", LivenessProbe: spec})
	tg.StartedAt = l.clock.Now().Add(-30 * time.Second)
	l.m.Add(tg, Seed{})
	l.expectCall(Liveness).reply <- pass
	l.parked(4 * time.Second)
	l.noJitter()
}

// Only first runs without an initial delay and the overdue first runs of
// containers that started before the Manager (adopted after a restart)
// are spread by a jitter, bounded by the period.
func TestJitterOnlyWithoutDelayOrAdopted(t *testing.T) {
	spec := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 4}
	adopted := func(l *looper, ago time.Duration, delay int32) {
		s := *spec
		s.InitialDelaySeconds = delay
		tg := target(&v1.Container{Name: "app", LivenessProbe: &s})
		tg.StartedAt = l.clock.Now().Add(-ago)
		l.m.Add(tg, Seed{})
	}

	l := newLooper(t, 3*time.Second)
	adopted(l, time.Hour, 0)
	if n := <-l.jitters; n != 4*time.Second {
		t.Fatalf("jitter asked within %v, want the period 4s", n)
	}
	l.parked(3 * time.Second)

	// Bounded by the period.
	l = newLooper(t, time.Hour)
	adopted(l, time.Hour, 0)
	l.parked(4*time.Second - time.Nanosecond)

	// A negative jitter does not make it early: it runs at once.
	l = newLooper(t, -time.Hour)
	adopted(l, time.Hour, 0)
	l.expectCall(Liveness).reply <- pass

	// An adopted container still in its initial delay runs on time.
	l = newLooper(t, 3*time.Second)
	adopted(l, time.Second, 5)
	l.parked(4 * time.Second)
	l.noJitter()

	// A new container without an initial delay is not probed at the
	// instant it started, when nothing in it listens yet, but within its
	// first period.
	l = newLooper(t, 3*time.Second)
	l.clock.Step(time.Minute)
	tg := target(&v1.Container{Name: "app", LivenessProbe: spec})
	tg.StartedAt = l.clock.Now()
	l.m.Add(tg, Seed{})
	if n := <-l.jitters; n != 4*time.Second {
		t.Fatalf("jitter asked within %v, want the period 4s", n)
	}
	l.parked(3 * time.Second)
}

func TestLoopKillRequestOnce(t *testing.T) {
	l := newLooper(t, 0)
	spec := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1, FailureThreshold: 2}
	l.m.Add(target(&v1.Container{Name: "app", LivenessProbe: spec}), Seed{})
	l.expectCall(Liveness).reply <- fail
	l.parked(time.Second)
	l.clock.Step(time.Second)
	l.expectCall(Liveness).reply <- fail
	for range 2 {
		if e := <-l.events; e.Message != "Liveness probe failed: boom" {
			t.Fatalf("event %+v", e)
		}
	}
	if c := <-l.changes; c.Kind != Liveness || c.Result != Failure || c.Message != "boom" {
		t.Fatalf("change %+v", c)
	}
	// The worker ended: nothing waits for a timer, stepping runs nothing.
	eventually(t, "the liveness worker to end", func() bool { return l.clock.Waiters() == 0 })
	l.clock.Step(time.Hour)
	l.noCall()
	select {
	case c := <-l.changes:
		t.Fatalf("a second change %+v", c)
	default:
	}
	if st := l.m.Status("uid-1", "app"); st.Probes[Liveness].Result != Failure {
		t.Fatalf("status %+v", st)
	}
}

func TestRemoveCancelsARunInFlight(t *testing.T) {
	l := newLooper(t, 0)
	l.m.Add(target(&v1.Container{Name: "app", ReadinessProbe: probe(1, 3)}), Seed{})
	c := l.expectCall(Readiness)
	l.m.RemovePod("uid-1")
	select {
	case <-c.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the run in flight was not cancelled")
	}
}

func TestCallbacksMayCallTheManager(t *testing.T) {
	clock := newFakeClock()
	r := &chanRunner{calls: make(chan *call)}
	var m *Manager
	got := make(chan Status, 1)
	m = newManager(Options{Clock: clock, Rand: func(time.Duration) time.Duration { return 0 }, OnChange: func(c Change) {
		got <- m.Status(c.PodUID, c.Container)
		m.Terminating(c.PodUID)
		m.Remove(c.PodUID, c.Container)
	}}, r)
	m.dispatching = true
	go m.dispatch()
	defer m.Close()
	m.Add(target(&v1.Container{Name: "app", ReadinessProbe: probe(1, 3)}), Seed{})
	(<-r.calls).reply <- pass
	select {
	case st := <-got:
		if !st.Ready {
			t.Fatalf("status in the callback %+v", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the callback did not run (or deadlocked)")
	}
}

func TestCloseEndsEveryGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := newFakeClock()
	r := &chanRunner{calls: make(chan *call)}
	m := NewManager(Options{Clock: clock, Rand: func(time.Duration) time.Duration { return 0 }})
	m.runner = r
	for _, pod := range []string{"a", "b", "c"} {
		tg := target(&v1.Container{Name: "app", ReadinessProbe: probe(1, 3), LivenessProbe: probe(1, 3)})
		tg.PodUID = pod
		m.Add(tg, Seed{})
	}
	// Two runs in flight, the rest waiting to send theirs.
	var inFlight []*call
	inFlight = append(inFlight, <-r.calls, <-r.calls)
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	for _, c := range inFlight {
		if c.ctx.Err() == nil {
			t.Error("a run in flight outlived Close")
		}
	}
	m.Add(target(&v1.Container{Name: "app", LivenessProbe: probe(1, 3)}), Seed{})
	if st := m.Status("uid-1", "app"); st.ContainerID != "" {
		t.Errorf("Add after Close: %+v", st)
	}
	m.Close()
	eventually(t, "the manager's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestRealClockAndHandlers wires the defaults end to end: the wall clock,
// the random jitter and a real HTTP probe.
func TestRealClockAndHandlers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	changes := make(chan Change, 1)
	m := NewManager(Options{OnChange: func(c Change) { changes <- c }})
	defer m.Close()
	spec := httpProbe(intstr.FromInt(serverPort(t, srv)), "/healthz")
	spec.PeriodSeconds = 1
	tg := target(&v1.Container{Name: "app", ReadinessProbe: spec})
	tg.StartedAt = time.Now()
	m.Add(tg, Seed{})
	select {
	case c := <-changes:
		if c.Kind != Readiness || c.Result != Success {
			t.Fatalf("change %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never ready")
	}
	if !m.Status("uid-1", "app").Ready {
		t.Fatal("not ready")
	}
}

func TestNames(t *testing.T) {
	for v, want := range map[fmt.Stringer]string{
		Liveness: "Liveness", Readiness: "Readiness", Startup: "Startup", Kind(9): "Unknown",
		Unknown: "Unknown", Success: "Success", Failure: "Failure",
		outSuccess: "success", outWarning: "warning", outFailure: "failure", outUnknown: "unknown",
	} {
		if got := v.String(); got != want {
			t.Errorf("%#v: %q, want %q", v, got, want)
		}
	}
}

// The startup probe runs at its initial delay and then every period; its
// pass hands over to readiness at once, without a jitter (kubelet runs
// readiness right after a startup result changes), and readiness then
// runs every period from that run. A readiness initial delay not yet over
// at the handover is kept.
func TestStartupHandover(t *testing.T) {
	exec := v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
	for _, tc := range []struct {
		name           string
		readinessDelay int32
		wantReadiness  time.Duration // after the handover
	}{
		{"at once", 0, 0},
		{"after its own delay", 6, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLooper(t, 500*time.Millisecond)
			tg := target(&v1.Container{Name: "app",
				StartupProbe:   &v1.Probe{ProbeHandler: exec, InitialDelaySeconds: 3, PeriodSeconds: 1},
				ReadinessProbe: &v1.Probe{ProbeHandler: exec, InitialDelaySeconds: tc.readinessDelay, PeriodSeconds: 10},
			})
			tg.StartedAt = l.clock.Now()
			l.m.Add(tg, Seed{})
			l.parked(3 * time.Second)
			l.clock.Step(3 * time.Second)
			l.expectCall(Startup).reply <- fail
			<-l.events
			l.parked(time.Second)
			l.clock.Step(time.Second)
			l.expectCall(Startup).reply <- pass
			if c := <-l.changes; c.Kind != Startup || c.Result != Success {
				t.Fatalf("change %+v", c)
			}
			if tc.wantReadiness > 0 {
				l.parked(tc.wantReadiness)
				l.noCall()
				l.clock.Step(tc.wantReadiness)
			}
			l.expectCall(Readiness).reply <- pass
			if c := <-l.changes; c.Kind != Readiness || c.Result != Success {
				t.Fatalf("change %+v", c)
			}
			if !l.m.Status("uid-1", "app").Ready {
				t.Fatal("not ready after the handover's readiness run")
			}
			l.parked(10 * time.Second)
			l.noJitter()
		})
	}
}
