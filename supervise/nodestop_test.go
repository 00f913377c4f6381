package supervise

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const evictMsg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."

func evictStop(grace time.Duration) NodeStop {
	return NodeStop{Reason: ReasonEvicted, Message: evictMsg, Grace: grace, Signal: "memory.available"}
}

func shutdownStop(grace time.Duration) NodeStop {
	return NodeStop{Reason: ReasonNodeShutdown, Message: ShutdownMessage, Grace: grace}
}

// nodeStopStep sends st to w as StopPod does, runs one step and returns
// whether StopPod would have returned.
func (e *env) nodeStopStep(w *podWorker, st NodeStop) bool {
	e.t.Helper()
	done := make(chan struct{})
	w.inbox.send(nodeStopMsg{stop: st, done: done})
	e.step(w)
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// checkNodeStopped checks kubelet's status of a pod the node stopped.
func checkNodeStopped(t *testing.T, e *env, p *v1.Pod, reason, msg string) {
	t.Helper()
	pod := e.st.pod(p.UID)
	if pod.Status.Phase != v1.PodFailed || pod.Status.Reason != reason || pod.Status.Message != msg {
		t.Errorf("status %s/%s %q, want Failed/%s %q", pod.Status.Phase, pod.Status.Reason, pod.Status.Message, reason, msg)
	}
	if c := condition(pod, v1.DisruptionTarget); c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonTerminationByKubelet || c.Message != msg {
		t.Errorf("DisruptionTarget condition %+v", c)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			t.Errorf("container %s not terminated: %+v", cs.Name, cs.State)
		}
	}
	if pod.DeletionTimestamp != nil {
		t.Errorf("a stopped pod still has a deletionTimestamp")
	}
	if r := e.st.pod(p.UID).Status.Conditions; slices.ContainsFunc(r, func(c v1.PodCondition) bool { return c.Type == v1.PodReady && c.Status == v1.ConditionTrue }) {
		t.Error("a stopped pod is Ready")
	}
}

// An eviction stops the pod as kubelet's eviction manager does (grace 0:
// SIGKILL, no preStop), releases its sandbox, reports Failed/Evicted with
// DisruptionTarget and a Warning Evicted event; the pod waits while its
// signal is under pressure, then after its back-off starts again as a new
// instance.
func TestNodeStopEviction(t *testing.T) {
	e := newEnv(t)
	p := testPod("evict", v1.RestartPolicyAlways, nil, "a")
	p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	w := e.worker(p)
	e.step(w)
	first := e.rt.running()["a"]
	// One crash, so the new instance's count from 0 shows.
	e.rt.exit(first, 1)
	e.step(w)
	old := e.rt.running()["a"]
	if e.status(p, "a").RestartCount != 1 {
		t.Fatalf("restart count %d before the eviction", e.status(p, "a").RestartCount)
	}
	oldSandbox := w.rec.Sandbox.ID

	if !e.nodeStopStep(w, evictStop(0)) {
		t.Fatal("StopPod would still wait after the step that stopped the containers")
	}
	if len(e.rt.running()) != 0 {
		t.Fatalf("still running: %v", e.rt.running())
	}
	if g, ok := e.rt.graces[old]; !ok || g != 0 {
		t.Errorf("stopped with grace %v (stopped: %v), want 0", g, ok)
	}
	if runs := e.hooks.runs(); slices.Contains(runs, "a preStop") {
		t.Errorf("preStop ran at grace 0: %v", runs)
	}
	if w.rec.Sandbox != nil || len(e.net.attached) != 0 || !slices.Contains(e.sbx.removed, oldSandbox) {
		t.Errorf("sandbox not released: record %+v, attached %v, removed %v", w.rec.Sandbox, e.net.attached, e.sbx.removed)
	}
	checkNodeStopped(t, e, p, ReasonEvicted, evictMsg)
	if !slices.Contains(e.st.events, "Evicted: "+evictMsg) {
		t.Errorf("no Evicted event in %v", e.st.events)
	}
	recs, _ := loadRecords(e.s.layout)
	if ns := recs[p.UID].NodeStop; ns == nil || ns.Reason != ReasonEvicted || ns.Signal != "memory.available" || ns.Stopped.IsZero() {
		t.Fatalf("record on disk: node stop %+v", ns)
	}

	// Not told about pressure yet, then under pressure: it waits, with
	// no wake-up of its own.
	if wake := e.step(w); !wake.IsZero() || len(e.rt.running()) != 0 {
		t.Fatalf("started (%v) or woke (%v) before any SetPressure", e.rt.running(), wake)
	}
	e.s.SetPressure([]string{"memory.available"})
	if wake := e.step(w); !wake.IsZero() || len(e.rt.running()) != 0 {
		t.Fatalf("started (%v) or woke (%v) under pressure", e.rt.running(), wake)
	}
	// Pressure gone: the back-off's 10 s first.
	e.s.SetPressure([]string{"nodefs.available"})
	wake := e.step(w)
	if len(e.rt.running()) != 0 || !wake.Equal(w.rec.NodeStop.Stopped.Add(10*time.Second)) {
		t.Fatalf("running %v, wake %v: want a wait of 10 s", e.rt.running(), wake)
	}
	checkNodeStopped(t, e, p, ReasonEvicted, evictMsg)
	e.clock.Step(10 * time.Second)
	e.step(w)
	now := e.rt.running()["a"]
	if now == "" {
		t.Fatal("not started again after the back-off")
	}
	pod := e.st.pod(p.UID)
	if pod.Status.Phase != v1.PodRunning || pod.Status.Reason != "" || condition(pod, v1.DisruptionTarget) != nil {
		t.Errorf("started again: phase %s reason %q conditions %+v", pod.Status.Phase, pod.Status.Reason, pod.Status.Conditions)
	}
	if cs := e.status(p, "a"); cs.RestartCount != 0 || cs.LastTerminationState.Terminated != nil {
		t.Errorf("new instance: restart count %d, last state %+v; want 0 and none", cs.RestartCount, cs.LastTerminationState.Terminated)
	}
	if w.rec.Sandbox == nil || w.rec.Sandbox.ID == oldSandbox {
		t.Errorf("new instance in sandbox %+v, old one %s", w.rec.Sandbox, oldSandbox)
	}
	if !e.st.has("StartedAgain") || !slices.Contains(e.st.events, "Evicted: "+evictMsg) {
		t.Errorf("events %v: want Evicted kept and StartedAgain", e.st.events)
	}
	if recs, _ := loadRecords(e.s.layout); recs[p.UID].NodeStop != nil || recs[p.UID].Evictions != 1 {
		t.Errorf("record after the start: node stop %+v, evictions %d", recs[p.UID].NodeStop, recs[p.UID].Evictions)
	}

	// Evicted again within 10 min: 20 s. After a run of 10 min: 10 s again.
	e.s.SetPressure([]string{"memory.available"})
	e.clock.Step(time.Minute)
	e.nodeStopStep(w, evictStop(0))
	e.s.SetPressure(nil)
	if wake := e.step(w); !wake.Equal(w.rec.NodeStop.Stopped.Add(20 * time.Second)) {
		t.Errorf("second eviction in a row waits until %v, want 20 s", wake)
	}
	e.clock.Step(20 * time.Second)
	e.step(w)
	if e.rt.running()["a"] == "" {
		t.Fatal("not started again after the second back-off")
	}
	e.clock.Step(10 * time.Minute)
	e.nodeStopStep(w, evictStop(0))
	if wake := e.step(w); !wake.Equal(w.rec.NodeStop.Stopped.Add(10 * time.Second)) {
		t.Errorf("eviction after a 10-min run waits until %v, want 10 s", wake)
	}
}

// A podvisor restart while an evicted pod waits keeps it evicted: it shows
// Failed/Evicted and starts again only once SetPressure has been called.
func TestNodeStopEvictionSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	p := testPod("evict", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	e.nodeStopStep(w, evictStop(-1))
	e.clock.Step(time.Hour)

	// A new podvisor: no pressure told yet, the pod from its record.
	e.s.pressure.Store(nil)
	recs, errs := loadRecords(e.s.layout)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	w2 := newPodWorker(&e.s.workerDeps, p.UID, desired(p), recs[p.UID])
	if wake := e.step(w2); !wake.IsZero() || len(e.rt.running()) != 0 {
		t.Fatalf("after a restart: running %v, wake %v, before SetPressure", e.rt.running(), wake)
	}
	checkNodeStopped(t, e, p, ReasonEvicted, evictMsg)
	e.s.SetPressure(nil)
	e.step(w2)
	if e.rt.running()["a"] == "" {
		t.Fatal("not started once SetPressure cleared its signal (back-off long over)")
	}
}

// A stop for the node's shutdown runs preStop hooks within the pod's
// grace, reports kubelet's Terminated status, and at the next podvisor
// start the pod goes on with no restart counted: the same restart count,
// no crash back-off, lastState as before the shutdown.
func TestNodeStopShutdown(t *testing.T) {
	for _, how := range []string{"NextStart", "Cancelled"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			p := testPod("down", v1.RestartPolicyAlways, []string{"init"}, "a")
			grace := int64(20)
			p.Spec.TerminationGracePeriodSeconds = &grace
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
			w := e.worker(p)
			e.step(w) // init
			e.rt.exit(e.rt.running()["init"], 0)
			e.step(w)
			first := e.rt.running()["a"]
			e.rt.exit(first, 3)
			e.step(w) // restarted at once: count 1, lastState exit 3
			id := e.rt.running()["a"]
			if id == "" || e.status(p, "a").RestartCount != 1 {
				t.Fatalf("not restarted: %v", e.status(p, "a"))
			}

			if !e.nodeStopStep(w, shutdownStop(-1)) {
				t.Fatal("StopPod would still wait")
			}
			if runs := e.hooks.runs(); !slices.Contains(runs, "a preStop") {
				t.Errorf("preStop did not run: %v", runs)
			}
			if g := e.rt.graces[id]; g <= 0 || g > 20*time.Second {
				t.Errorf("stopped with grace %v, want within the pod's 20 s", g)
			}
			checkNodeStopped(t, e, p, ReasonNodeShutdown, ShutdownMessage)
			if len(e.rt.running()) != 0 || w.rec.Sandbox != nil {
				t.Fatalf("running %v, sandbox %+v", e.rt.running(), w.rec.Sandbox)
			}
			// Nothing starts it on its own.
			e.s.SetPressure(nil)
			if e.step(w); len(e.rt.running()) != 0 {
				t.Fatal("a shutdown stop started again by itself")
			}

			switch how {
			case "NextStart":
				recs, _ := loadRecords(e.s.layout)
				w = newPodWorker(&e.s.workerDeps, p.UID, desired(p), recs[p.UID])
			case "Cancelled":
				e.s.mu.Lock()
				e.s.workers[p.UID] = w
				e.s.mu.Unlock()
				e.s.ResumeShutdownStops()
			}
			e.step(w)
			if e.rt.running()["init"] != "" {
				e.rt.exit(e.rt.running()["init"], 0)
				e.step(w)
			}
			if e.rt.running()["a"] == "" {
				t.Fatalf("not started again (%s): running %v", how, e.rt.running())
			}
			cs := e.status(p, "a")
			if cs.RestartCount != 1 {
				t.Errorf("restart count %d after the shutdown, want 1 (the stop is no restart)", cs.RestartCount)
			}
			if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 3 {
				t.Errorf("last state %+v, want the crash before the shutdown (exit 3)", lt)
			}
			if ic := e.status(p, "init"); ic.RestartCount != 0 {
				t.Errorf("init restart count %d", ic.RestartCount)
			}
			pod := e.st.pod(p.UID)
			if pod.Status.Phase != v1.PodRunning || condition(pod, v1.DisruptionTarget) != nil || pod.Status.Reason != "" {
				t.Errorf("after the start: %s %q %+v", pod.Status.Phase, pod.Status.Reason, pod.Status.Conditions)
			}
			if !e.st.has("StartedAgain") {
				t.Errorf("no StartedAgain event: %v", e.st.events)
			}
		})
	}
}

// While a node stop waits on its containers the pod is Terminating
// (deletionTimestamp and the stop's grace), and StopPod has not returned.
func TestNodeStopTerminating(t *testing.T) {
	e := newEnv(t)
	p := testPod("slow", v1.RestartPolicyAlways, nil, "a")
	grace := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &grace
	w := e.worker(p)
	e.step(w)
	e.rt.stopIgnores = true
	if e.nodeStopStep(w, evictStop(5*time.Second)) {
		t.Fatal("StopPod returned while the container runs")
	}
	pod := e.st.pod(p.UID)
	if pod.DeletionTimestamp == nil || pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds != 5 {
		t.Fatalf("deletionTimestamp %v grace %v, want set and 5", pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds)
	}
	if pod.Status.Phase != v1.PodFailed || pod.Status.Reason != ReasonEvicted {
		t.Errorf("phase %s reason %s while stopping", pod.Status.Phase, pod.Status.Reason)
	}
	e.rt.stopIgnores = false
	done := make(chan struct{})
	w.inbox.send(nodeStopMsg{stop: evictStop(0), done: done})
	e.step(w)
	select {
	case <-done:
	default:
		t.Fatal("StopPod still waits once the containers stopped")
	}
	if pod := e.st.pod(p.UID); pod.DeletionTimestamp != nil {
		t.Error("deletionTimestamp kept after the stop")
	}
	// The second stop shortened the grace to 0.
	if g := e.rt.graces[w.rec.Apps["a"].Terminated.ContainerID[len("containerd://"):]]; g != 0 {
		t.Errorf("second stop's grace %v, want 0", g)
	}
}

// StopPod: ErrNoPod for an unknown UID; a removed pod's stop wins over a
// node stop.
func TestStopPodNoPod(t *testing.T) {
	e := newEnv(t)
	err := e.s.StopPod(context.Background(), "nope", evictStop(0))
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("StopPod of an unknown pod: %v", err)
	}
}

func TestNodeStopGrace(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		pod     *int64
		asked   time.Duration
		grace   time.Duration
		preStop bool
	}{
		{nil, -1, 30 * time.Second, true},
		{secs(60), -1, 60 * time.Second, true},
		{secs(0), -1, 2 * time.Second, false}, // kubelet's minimum, no hook
		{secs(60), 0, 0, false},
		{secs(60), 10 * time.Second, 10 * time.Second, true},
		{secs(5), 10 * time.Second, 5 * time.Second, true},
		{nil, 10 * time.Second, 10 * time.Second, true},
		{secs(0), 10 * time.Second, 0, false},
	} {
		pod := &v1.Pod{}
		pod.Spec.TerminationGracePeriodSeconds = tc.pod
		g, ps := nodeStopGrace(pod, tc.asked)
		if g != tc.grace || ps != tc.preStop {
			t.Errorf("pod %v asked %v: %v %v, want %v %v", tc.pod, tc.asked, g, ps, tc.grace, tc.preStop)
		}
	}
}

func TestEvictionBackoff(t *testing.T) {
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := evictionBackoff(i + 1); got != w {
			t.Errorf("eviction %d: %v, want %v", i+1, got, w)
		}
	}
}
