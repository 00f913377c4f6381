package probes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// answer is what a fake run returns.
type answer struct {
	o   outcome
	out string
	err error
}

var (
	pass = answer{o: outSuccess}
	fail = answer{o: outFailure, out: "boom"}
)

// scriptRunner answers each kind's runs from a script, at once, and
// counts them with the target each saw.
type scriptRunner struct {
	mu      sync.Mutex
	script  map[Kind][]answer
	runs    map[Kind]int
	targets []Target
}

func (s *scriptRunner) run(_ context.Context, kind Kind, _ *v1.Probe, t Target) (outcome, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[kind]++
	s.targets = append(s.targets, t)
	q := s.script[kind]
	if len(q) == 0 {
		panic(fmt.Sprintf("unscripted %v run", kind))
	}
	s.script[kind] = q[1:]
	return q[0].o, q[0].out, q[0].err
}

func (s *scriptRunner) push(kind Kind, as ...answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script[kind] = append(s.script[kind], as...)
}

func (s *scriptRunner) count(kind Kind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[kind]
}

// stepper is a Manager whose workers are not run but stepped by the test,
// and whose notices the test takes.
type stepper struct {
	t       *testing.T
	m       *Manager
	r       *scriptRunner
	clock   *fakeClock
	workers []*worker
}

func newStepper(t *testing.T) *stepper {
	s := &stepper{t: t, r: &scriptRunner{script: map[Kind][]answer{}, runs: map[Kind]int{}}, clock: newFakeClock()}
	s.m = newManager(Options{Clock: s.clock, Rand: func(time.Duration) time.Duration { return 0 }}, s.r)
	s.m.spawn = func(w *worker) { s.workers = append(s.workers, w) }
	t.Cleanup(s.m.Close)
	return s
}

// worker returns the last worker spawned for kind in pod uid-1.
func (s *stepper) worker(kind Kind) *worker { return s.workerOf("uid-1", kind) }

func (s *stepper) workerOf(pod string, kind Kind) *worker {
	s.t.Helper()
	for i := len(s.workers) - 1; i >= 0; i-- {
		if w := s.workers[i]; w.kind == kind && w.inst.t.PodUID == pod {
			return w
		}
	}
	s.t.Fatalf("no %v worker was started in %s", kind, pod)
	return nil
}

func (s *stepper) spawned() []Kind {
	var ks []Kind
	for _, w := range s.workers {
		ks = append(ks, w.kind)
	}
	return ks
}

// step runs w once with the answer given, reporting whether it goes on.
func (s *stepper) step(w *worker, a answer) bool {
	s.r.push(w.kind, a)
	s.clock.Step(time.Second)
	return w.doProbe()
}

// notices takes the notices posted so far.
func (s *stepper) notices() (evs []Event, chs []Change) {
	for {
		n, ok := s.m.pop()
		if !ok {
			return evs, chs
		}
		if n.event != nil {
			evs = append(evs, *n.event)
		}
		if n.change != nil {
			chs = append(chs, *n.change)
		}
	}
}

func (s *stepper) status() Status { return s.m.Status("uid-1", "app") }

func probe(successes, failures int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		SuccessThreshold: successes, FailureThreshold: failures}
}

func TestReadinessThresholds(t *testing.T) {
	s := newStepper(t)
	tg := target(&v1.Container{Name: "app", ReadinessProbe: probe(2, 3)})
	s.m.Add(tg, Seed{})
	if got := s.spawned(); !slices.Equal(got, []Kind{Readiness}) {
		t.Fatalf("workers %v, want readiness only", got)
	}
	if st := s.status(); !st.Started || st.Ready || st.Probes[Readiness].Result != Failure {
		t.Fatalf("before any run: %+v, want started, not ready", st)
	}
	w := s.worker(Readiness)
	steps := []struct {
		a         answer
		ready     bool
		change    []Result
		unhealthy bool
	}{
		{pass, false, nil, false},              // 1 of 2 successes
		{pass, true, []Result{Success}, false}, // threshold
		{pass, true, nil, false},
		{fail, true, nil, true}, // 1 of 3 failures, each told
		{fail, true, nil, true},
		{pass, true, nil, false}, // a success resets the failures
		{fail, true, nil, true},
		{fail, true, nil, true},
		{fail, false, []Result{Failure}, true}, // not ready, but not killed
		{fail, false, nil, true},
		{pass, false, nil, false},
		{pass, true, []Result{Success}, false},
	}
	for i, st := range steps {
		if !s.step(w, st.a) {
			t.Fatalf("step %d: readiness worker stopped", i)
		}
		evs, chs := s.notices()
		if got := s.status().Ready; got != st.ready {
			t.Errorf("step %d: ready %v, want %v", i, got, st.ready)
		}
		var results []Result
		for _, c := range chs {
			if c.Kind != Readiness || c.ContainerID != "ctr-1" || c.PodUID != "uid-1" || c.Container != "app" {
				t.Errorf("step %d: change %+v", i, c)
			}
			results = append(results, c.Result)
			if c.Result == Failure && c.Message != "boom" {
				t.Errorf("step %d: failure change message %q", i, c.Message)
			}
		}
		if !slices.Equal(results, st.change) {
			t.Errorf("step %d: changes %v, want %v", i, results, st.change)
		}
		if st.unhealthy {
			want := Event{PodUID: "uid-1", Container: "app", ContainerID: "ctr-1", Kind: Readiness,
				Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: boom"}
			if len(evs) != 1 || evs[0] != want {
				t.Errorf("step %d: events %+v, want %+v", i, evs, want)
			}
		} else if len(evs) != 0 {
			t.Errorf("step %d: events %+v, want none", i, evs)
		}
	}
	ps := s.status().Probes[Readiness]
	if ps.Last != Success || ps.Time != s.clock.Now() {
		t.Errorf("last run %+v", ps)
	}
}

func TestLivenessFailureKillsOnceThenHolds(t *testing.T) {
	s := newStepper(t)
	s.m.Add(target(&v1.Container{Name: "app", LivenessProbe: probe(1, 3)}), Seed{})
	w := s.worker(Liveness)
	if st := s.status(); st.Probes[Liveness].Result != Success {
		t.Fatalf("initial liveness %v, want Success", st.Probes[Liveness].Result)
	}
	for i, a := range []answer{fail, fail, pass, fail, fail} {
		if !s.step(w, a) {
			t.Fatalf("run %d: stopped below the threshold", i)
		}
	}
	if _, chs := s.notices(); len(chs) != 0 {
		t.Fatalf("changes %+v below the threshold", chs)
	}
	if s.step(w, answer{o: outFailure, out: "HTTP probe failed with statuscode: 500"}) {
		t.Fatal("the liveness worker goes on after failing")
	}
	evs, chs := s.notices()
	want := Change{PodUID: "uid-1", Container: "app", ContainerID: "ctr-1", Kind: Liveness, Result: Failure,
		Message: "HTTP probe failed with statuscode: 500"}
	if len(chs) != 1 || chs[0] != want {
		t.Fatalf("changes %+v, want %+v", chs, want)
	}
	if len(evs) != 1 || evs[0].Message != "Liveness probe failed: HTTP probe failed with statuscode: 500" {
		t.Fatalf("events %+v", evs)
	}
	// Held: no more runs, no second kill request.
	runs := s.r.count(Liveness)
	if w.doProbe() || s.r.count(Liveness) != runs {
		t.Fatal("the held worker ran again")
	}
	if _, chs := s.notices(); len(chs) != 0 {
		t.Fatalf("changes %+v after the hold", chs)
	}

	// The restarted container's new instance is probed afresh.
	tg := target(&v1.Container{Name: "app", LivenessProbe: probe(1, 3)})
	tg.ContainerID = "ctr-2"
	s.m.Add(tg, Seed{})
	w2 := s.worker(Liveness)
	if w2 == w {
		t.Fatal("no new worker for the new container ID")
	}
	if st := s.status(); st.ContainerID != "ctr-2" || st.Probes[Liveness].Result != Success {
		t.Fatalf("new instance %+v", st)
	}
	if !s.step(w2, fail) || !s.step(w2, fail) {
		t.Fatal("the new instance's worker counts the old failures")
	}
	if s.step(w2, fail) {
		t.Fatal("the new instance's worker goes on after three failures")
	}
	if _, chs := s.notices(); len(chs) != 1 || chs[0].ContainerID != "ctr-2" {
		t.Fatalf("changes %+v, want one failure of ctr-2", chs)
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	s := newStepper(t)
	c := &v1.Container{Name: "app", StartupProbe: probe(1, 3), ReadinessProbe: probe(1, 3), LivenessProbe: probe(1, 3)}
	s.m.Add(target(c), Seed{})
	if got := s.spawned(); !slices.Equal(got, []Kind{Startup}) {
		t.Fatalf("workers %v, want startup only", got)
	}
	st := s.status()
	if st.Started || st.Ready || st.Probes[Startup].Result != Unknown || st.Probes[Liveness].Result != Success {
		t.Fatalf("before startup: %+v", st)
	}
	w := s.worker(Startup)
	if !s.step(w, fail) || !s.step(w, fail) {
		t.Fatal("startup stopped below its threshold")
	}
	if evs, _ := s.notices(); len(evs) != 2 || evs[0].Message != "Startup probe failed: boom" {
		t.Fatalf("events %+v", evs)
	}
	if s.step(w, pass) {
		t.Fatal("the startup worker goes on after passing")
	}
	if _, chs := s.notices(); len(chs) != 1 || chs[0].Kind != Startup || chs[0].Result != Success {
		t.Fatalf("changes %+v, want startup success", chs)
	}
	if got := s.spawned(); !slices.Equal(got, []Kind{Startup, Readiness, Liveness}) {
		t.Fatalf("workers %v, want readiness and liveness after startup", got)
	}
	if st := s.status(); !st.Started || st.Ready {
		t.Fatalf("after startup: %+v, want started, not yet ready", st)
	}
	if !s.step(s.worker(Readiness), pass) || !s.status().Ready {
		t.Fatal("not ready after readiness passed")
	}
	if s.r.count(Startup) != 3 {
		t.Fatalf("startup ran %d times, want 3", s.r.count(Startup))
	}
}

func TestStartupFailureKills(t *testing.T) {
	s := newStepper(t)
	s.m.Add(target(&v1.Container{Name: "app", StartupProbe: probe(1, 1), LivenessProbe: probe(1, 1)}), Seed{})
	if s.step(s.worker(Startup), fail) {
		t.Fatal("the startup worker goes on after failing")
	}
	_, chs := s.notices()
	if len(chs) != 1 || chs[0].Kind != Startup || chs[0].Result != Failure || chs[0].Message != "boom" {
		t.Fatalf("changes %+v, want a startup failure", chs)
	}
	if got := s.spawned(); !slices.Equal(got, []Kind{Startup}) {
		t.Fatalf("workers %v: liveness started for a container that never started", got)
	}
	if s.status().Started {
		t.Fatal("started after the startup probe failed")
	}
}

func TestSeedOfAnAdoptedContainer(t *testing.T) {
	c := &v1.Container{Name: "app", StartupProbe: probe(1, 3), ReadinessProbe: probe(1, 3), LivenessProbe: probe(1, 3)}

	s := newStepper(t)
	s.m.Add(target(c), Seed{Started: true, Ready: true})
	if got := s.spawned(); !slices.Equal(got, []Kind{Readiness, Liveness}) {
		t.Fatalf("workers %v: a started container's startup probe runs again", got)
	}
	if st := s.status(); !st.Started || !st.Ready {
		t.Fatalf("adopted: %+v, want started and ready", st)
	}
	// Liveness history was lost: it counts afresh from Success, so one
	// failure does not kill; readiness needs its threshold to flip.
	if !s.step(s.worker(Liveness), fail) || !s.step(s.worker(Readiness), fail) || !s.status().Ready {
		t.Fatal("an adopted container lost readiness or liveness on one failure")
	}
	if _, chs := s.notices(); len(chs) != 0 {
		t.Fatalf("changes %+v", chs)
	}

	s = newStepper(t)
	s.m.Add(target(c), Seed{Started: true})
	if st := s.status(); !st.Started || st.Ready {
		t.Fatalf("adopted, not ready: %+v", st)
	}

	s = newStepper(t)
	s.m.Add(target(c), Seed{})
	if got := s.spawned(); !slices.Equal(got, []Kind{Startup}) {
		t.Fatalf("workers %v for a fresh container", got)
	}
}

func TestRunsThatErrorOrWarn(t *testing.T) {
	s := newStepper(t)
	s.m.Add(target(&v1.Container{Name: "app", ReadinessProbe: probe(1, 2)}), Seed{})
	w := s.worker(Readiness)
	broken := answer{o: outUnknown, err: errors.New(`port "http" not found`)}
	s.r.push(Readiness, broken, broken)
	// Retried at once until the third try, which answers.
	if !s.step(w, pass) || s.r.count(Readiness) != 3 || !s.status().Ready {
		t.Fatalf("runs %d, ready %v: an errored run is not retried", s.r.count(Readiness), s.status().Ready)
	}
	s.r.push(Readiness, broken, broken)
	if !s.step(w, broken) {
		t.Fatal("stopped on errors")
	}
	evs, _ := s.notices()
	want := `Readiness probe errored and resulted in unknown state: port "http" not found`
	if len(evs) != 1 || evs[0].Reason != "Unhealthy" || evs[0].Message != want {
		t.Fatalf("events %+v, want one %q", evs, want)
	}
	if ps := s.status().Probes[Readiness]; ps.Last != Unknown || ps.Message != `port "http" not found` || ps.Result != Success {
		t.Fatalf("after an errored run: %+v", ps)
	}
	// An errored run does not count: one failure is still below two.
	if !s.step(w, fail) || !s.status().Ready {
		t.Fatal("an errored run counted as a failure")
	}
	s.notices()
	if !s.step(w, answer{o: outWarning, out: "Probe terminated redirects, Response body: moved"}) || !s.status().Ready {
		t.Fatal("a warning is not a success")
	}
	evs, _ = s.notices()
	if len(evs) != 1 || evs[0].Reason != "ProbeWarning" || evs[0].Message != "Readiness probe warning: Probe terminated redirects, Response body: moved" {
		t.Fatalf("events %+v", evs)
	}
	// An unknown outcome without an error is a silent failure.
	if !s.step(w, answer{o: outUnknown}) || !s.step(w, answer{o: outUnknown}) || s.status().Ready {
		t.Fatal("unknown outcomes did not count as failures")
	}
	if evs, _ := s.notices(); len(evs) != 0 {
		t.Fatalf("events %+v for unknown outcomes", evs)
	}
}

func TestTerminating(t *testing.T) {
	s := newStepper(t)
	c := &v1.Container{Name: "app", ReadinessProbe: probe(1, 3), LivenessProbe: probe(1, 3)}
	s.m.Add(target(c), Seed{})
	other := target(&v1.Container{Name: "app", ReadinessProbe: probe(1, 3)})
	other.PodUID = "uid-2"
	s.m.Add(other, Seed{Ready: true})
	// A failure below the threshold first: its message is not the
	// terminating pod's.
	if !s.step(s.worker(Readiness), pass) || !s.step(s.worker(Readiness), fail) {
		t.Fatal("stopped")
	}
	s.notices()
	s.m.Terminating("uid-1")
	_, chs := s.notices()
	want := Change{PodUID: "uid-1", Container: "app", ContainerID: "ctr-1", Kind: Readiness, Result: Failure}
	if len(chs) != 1 || chs[0] != want {
		t.Fatalf("changes %+v, want %+v", chs, want)
	}
	if st := s.status(); st.Ready || !st.Started {
		t.Fatalf("terminating: %+v, want started, not ready", st)
	}
	runs := s.r.count(Liveness) + s.r.count(Readiness)
	for _, w := range []*worker{s.worker(Readiness), s.worker(Liveness)} {
		if w.doProbe() {
			t.Errorf("%v worker goes on while the pod terminates", w.kind)
		}
	}
	if s.r.count(Liveness)+s.r.count(Readiness) != runs {
		t.Error("a probe ran while the pod terminates")
	}
	if !s.m.Status("uid-2", "app").Ready {
		t.Error("another pod lost readiness")
	}
	s.m.Terminating("uid-1")
	if _, chs := s.notices(); len(chs) != 0 {
		t.Fatalf("a second Terminating told %+v", chs)
	}
	// A container started in a terminating pod is not probed.
	n := len(s.workers)
	tg := target(c)
	tg.ContainerID = "ctr-2"
	s.m.Add(tg, Seed{})
	if len(s.workers) != n || s.status().Ready {
		t.Fatal("a container added to a terminating pod is probed or ready")
	}
	s.m.RemovePod("uid-1")
	if st := s.status(); st.ContainerID != "" {
		t.Fatalf("after RemovePod: %+v", st)
	}
}

func TestAddAgainAndRemove(t *testing.T) {
	s := newStepper(t)
	c := &v1.Container{Name: "app", ReadinessProbe: probe(1, 3)}
	tg := target(c)
	tg.PodIP = ""
	s.m.Add(tg, Seed{})
	s.m.Add(target(c), Seed{}) // the same instance, its IP now known
	if len(s.workers) != 1 {
		t.Fatalf("%d workers after adding the same instance twice", len(s.workers))
	}
	w := s.worker(Readiness)
	if !s.step(w, pass) || s.r.targets[0].PodIP != "127.0.0.1" {
		t.Fatalf("probed %+v, want the updated pod IP", s.r.targets)
	}
	s.m.Remove("uid-1", "app")
	if st := s.status(); st.ContainerID != "" || st.Ready {
		t.Fatalf("after Remove: %+v", st)
	}
	if w.doProbe() {
		t.Fatal("a removed container's worker goes on")
	}

	// No probes: started and ready at once, nothing runs.
	s.m.Add(target(&v1.Container{Name: "app"}), Seed{})
	if st := s.status(); !st.Started || !st.Ready || len(s.workers) != 1 || st.ContainerID != "ctr-1" {
		t.Fatalf("without probes: %+v, %d workers", st, len(s.workers))
	}
}

func TestNoticesOfAReplacedInstanceAreDropped(t *testing.T) {
	s := newStepper(t)
	c := &v1.Container{Name: "app", LivenessProbe: probe(1, 1)}
	s.m.Add(target(c), Seed{})
	s.step(s.worker(Liveness), fail)
	tg := target(c)
	tg.ContainerID = "ctr-2"
	s.m.Add(tg, Seed{})
	if evs, chs := s.notices(); len(evs)+len(chs) != 0 {
		t.Fatalf("told %+v %+v about a replaced instance", evs, chs)
	}
}
