package supervise

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/probes"
	v1 "k8s.io/api/core/v1"
)

func (f *fakeStatus) eventsOf(reason string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		if m, ok := strings.CutPrefix(e, reason+": "); ok {
			out = append(out, m)
		}
	}
	return out
}

// A container's probes start with its run, addressed at the pod IP; a
// liveness failure kills it with the probe's grace period, a Killing event
// says why, and the restart policy brings it back.
func TestWorkerLivenessKill(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	g := int64(9)
	p.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &g}
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["a"]
	if got := e.pr.addedIDs(); !slices.Equal(got, []string{id}) {
		t.Fatalf("probed %v, want [%s]", got, id)
	}
	if tg := e.pr.added[0]; tg.PodIP == "" || tg.PodIP != e.st.pod(p.UID).Status.PodIP || tg.StartedAt.IsZero() {
		t.Errorf("target %+v", tg)
	}
	e.s.track(id, w)
	e.s.probeChanged(probes.Change{PodUID: string(p.UID), Container: "a", ContainerID: id, Kind: probes.Readiness, Result: probes.Failure})
	e.step(w)
	if e.rt.running()["a"] != id {
		t.Fatal("a readiness failure killed the container")
	}
	e.s.probeChanged(probes.Change{PodUID: string(p.UID), Container: "a", ContainerID: id, Kind: probes.Liveness, Result: probes.Failure})
	e.step(w)
	if e.rt.graces[id] != 9*time.Second {
		t.Errorf("killed with grace %v, want the probe's 9s", e.rt.graces[id])
	}
	if got := e.st.eventsOf("Killing"); !slices.Contains(got, "Container a failed liveness probe, will be restarted") {
		t.Errorf("Killing events %q", got)
	}
	if e.status(p, "a").LastTerminationState.Terminated == nil && e.status(p, "a").State.Terminated == nil {
		t.Fatalf("the kill's exit was not recorded: %+v", e.status(p, "a"))
	}
	if !slices.Contains(e.pr.removed, string(p.UID)+"/a") {
		t.Errorf("probes of the ended run not removed: %v", e.pr.removed)
	}
	// The crash back-off of a first restart is 10 s.
	e.clock.Step(11 * time.Second)
	e.step(w)
	if nid := e.rt.running()["a"]; nid == "" || nid == id {
		t.Fatalf("not restarted: running %v", e.rt.running())
	}
	if got := e.pr.addedIDs(); len(got) != 2 {
		t.Errorf("new run not probed: %v", got)
	}
}

// started and ready in status come from the probes: not ready while the
// readiness probe fails, no restart for it.
func TestWorkerReadiness(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["a"]
	// The manager tells each change; the worker keeps what it says.
	e.pr.set(string(p.UID), "a", probes.Status{ContainerID: id, Started: true, Ready: false})
	e.s.probeChanged(probes.Change{PodUID: string(p.UID), Container: "a", ContainerID: id, Kind: probes.Readiness, Result: probes.Failure})
	e.step(w)
	cs := e.status(p, "a")
	if cs.Ready || !*cs.Started || e.rt.running()["a"] != id {
		t.Errorf("ready %v started %v running %v", cs.Ready, *cs.Started, e.rt.running())
	}
	if conditionTrue(e.st.pod(p.UID).Status.Conditions, v1.PodReady) {
		t.Error("pod Ready with a container not ready")
	}
	e.pr.set(string(p.UID), "a", probes.Status{ContainerID: id, Started: true, Ready: true})
	e.s.probeChanged(probes.Change{PodUID: string(p.UID), Container: "a", ContainerID: id, Kind: probes.Readiness, Result: probes.Success})
	e.step(w)
	if !e.status(p, "a").Ready || !conditionTrue(e.st.pod(p.UID).Status.Conditions, v1.PodReady) {
		t.Error("not ready once the probe passes")
	}
	rec, _ := loadRecords(e.s.layout)
	if cr := rec[p.UID].Apps["a"]; !cr.Started || !cr.Ready {
		t.Errorf("record keeps started %v ready %v", cr.Started, cr.Ready)
	}
	// Stopping: the prober is told at once.
	e.stopStep(w)
	if !e.pr.terminating[string(p.UID)] {
		t.Error("prober not told of the termination")
	}
}

func conditionTrue(cs []v1.PodCondition, t v1.PodConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// A podvisor that restarts seeds the probes of running containers from
// the record: an adopted container is neither gated again nor killed.
func TestWorkerProbesSeededOnRestart(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["a"]

	e2 := newEnv(t)
	e2.rt, e2.s.rt = e.rt, e.rt
	e2.s.layout, e2.s.sandboxes = e.s.layout, e.s.sandboxes
	recs, _ := loadRecords(e.s.layout)
	w2 := newPodWorker(&e2.s.workerDeps, p.UID, desired(p), recs[p.UID])
	e2.step(w2)
	if got := e2.pr.addedIDs(); !slices.Equal(got, []string{id}) {
		t.Fatalf("adopted container probed as %v, want [%s]", got, id)
	}
	if s := e2.pr.seeds[0]; !s.Started || !s.Ready {
		t.Errorf("seed %+v, want started and ready from the record", s)
	}
	// Every status the new podvisor published, the first one (before
	// the container was adopted) included, shows it started and ready.
	e2.st.mu.Lock()
	defer e2.st.mu.Unlock()
	if len(e2.st.published) < 2 {
		t.Fatalf("%d statuses published, want the one before adoption and the one after", len(e2.st.published))
	}
	for i, pub := range e2.st.published {
		cs := pub.Status.ContainerStatuses[0]
		if !cs.Ready || cs.Started == nil || !*cs.Started || !conditionTrue(pub.Status.Conditions, v1.PodReady) {
			t.Errorf("status %d after the restart: started %v ready %v, conditions %+v", i, cs.Started, cs.Ready, pub.Status.Conditions)
		}
	}
}

// postStart runs after the start; its failure is told and kills the
// container, whose exit then follows the restart policy. preStop runs
// before the stop signal, and its time is taken from the grace period.
func TestWorkerHooks(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyNever, nil, "a", "b")
	grace := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &grace
	hs := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}
	p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: hs}
	p.Spec.Containers[1].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{}, PreStop: &v1.LifecycleHandler{}}
	e.hooks.fail = map[*v1.LifecycleHandler]error{hs: errors.New("exit 1")}
	w := e.worker(p)
	e.step(w)
	if got := e.st.eventsOf("FailedPostStartHook"); !slices.Equal(got, []string{"hook said: exit 1"}) {
		t.Errorf("FailedPostStartHook events %q", got)
	}
	if _, ok := e.rt.running()["a"]; ok {
		t.Error("a container whose postStart failed still runs")
	}
	e.step(w)
	if cs := e.status(p, "a"); cs.State.Terminated == nil {
		t.Errorf("a after its failed postStart: %+v", cs.State)
	}
	bid := e.rt.running()["b"]
	if bid == "" || len(e.pr.addedIDs()) != 1 || e.pr.addedIDs()[0] != bid {
		t.Errorf("running %v, probed %v: only b, whose postStart passed", e.rt.running(), e.pr.addedIDs())
	}
	e.stopStep(w)
	if got := e.hooks.runs(); !slices.Equal(got, []string{"a postStart", "b postStart", "b preStop"}) {
		t.Errorf("hooks ran %q", got)
	}
	if g := e.rt.graces[bid]; g != 30*time.Second {
		t.Errorf("b stopped with grace %v after an instant preStop, want 30s", g)
	}
	if got := e.st.eventsOf("Killing"); !slices.Contains(got, "Stopping container b") {
		t.Errorf("Killing events %q", got)
	}
}

// A preStop hook that fails is told without its output (kubelet keeps
// secrets out of events); one that hangs is cut off at the grace period.
func TestWorkerPreStopFailsAndHangs(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	pre := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"x"}}}
	p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: pre}
	e.hooks.fail = map[*v1.LifecycleHandler]error{pre: errors.New("secret output")}
	w := e.worker(p)
	e.step(w)
	e.stopStep(w)
	if got := e.st.eventsOf("FailedPreStopHook"); !slices.Equal(got, []string{"PreStopHook failed"}) {
		t.Errorf("FailedPreStopHook events %q", got)
	}
	if len(e.rt.running()) != 0 {
		t.Error("not stopped after a failed preStop")
	}
}

// A preStop hook still running when the grace period ends is no failure:
// the signal goes, and no FailedPreStopHook is told (kubelet's
// executePreStopHook).
func TestWorkerPreStopOutlivesGrace(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	pre := &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 100}}
	p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: pre}
	e.hooks.block = map[*v1.LifecycleHandler]bool{pre: true}
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["a"]
	done := make(chan struct{})
	go func() { defer close(done); e.stopStep(w) }()
	poll(t, "the hook's grace period to be timed", func() bool { return e.clock.timers() == 1 })
	e.clock.Step(gracePeriod(p) - time.Millisecond)
	select {
	case <-done:
		t.Fatal("the stop did not wait for the hook within the grace period")
	default:
	}
	e.clock.Step(time.Millisecond)
	poll(t, "the stop to go on once the grace period is over", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	if got := e.st.eventsOf("FailedPreStopHook"); len(got) != 0 {
		t.Errorf("FailedPreStopHook for a hook cut off by the grace period: %q", got)
	}
	if e.rt.graces[id] != 2*time.Second {
		t.Errorf("signal grace %v, want the 2 s minimum left", e.rt.graces[id])
	}
}

// A probe result about a run that has ended since asks for nothing.
func TestWorkerIgnoresEndedRunsProbes(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	w.receiveProbe(probes.Change{ContainerID: "gone", Kind: probes.Liveness, Result: probes.Failure})
	if len(w.probeFailed) != 0 {
		t.Errorf("kept a failure of an ended run: %v", w.probeFailed)
	}
}
