package supervise

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
)

func condition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// While containerd cannot be reached pods say so, nothing is tried and
// nothing is charged to a back-off; when it answers again everything
// converges.
func TestRuntimeOutage(t *testing.T) {
	e := newEnv(t)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	old := testPod("old", v1.RestartPolicyAlways, nil, "c")
	snaps <- snapshot(old)
	poll(t, "old running", func() bool { return e.runningCount() == 1 })
	id := e.ctrOf(old.UID)

	down := fmt.Errorf("%w: connection refused", ErrRuntimeUnavailable)
	for _, m := range []string{"List", "State", "EnsureImage", "Create", "Start", "Stop", "Remove", "Info"} {
		e.rt.setFail(m, down)
	}
	e.rt.errs <- down
	poll(t, "old shown as not ready for want of containerd", func() bool {
		p := e.st.pod(old.UID)
		c := condition(p, ConditionRuntimeReachable)
		r := condition(p, v1.PodReady)
		return c != nil && c.Status == v1.ConditionFalse && r.Status == v1.ConditionFalse && r.Reason == "RuntimeUnreachable"
	})
	e.rt.exit(id, 137) // killed during the outage; seen once containerd is back
	creates := e.rt.count("EnsureImage")
	fresh := testPod("new", v1.RestartPolicyAlways, nil, "c")
	snaps <- snapshot(old, fresh)
	poll(t, "new shown as pending, for want of containerd", func() bool {
		p := e.st.pod(fresh.UID)
		return p != nil && p.Status.Phase == v1.PodPending && condition(p, ConditionRuntimeReachable) != nil
	})
	if e.rt.count("EnsureImage") != creates {
		t.Error("a start was tried while containerd was away")
	}
	if p := e.st.pod(fresh.UID); p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("new pod waits with %+v", p.Status.ContainerStatuses[0].State.Waiting)
	}
	e.st.mu.Lock()
	healthy := e.st.health == nil
	e.st.mu.Unlock()
	if healthy {
		t.Error("healthy while containerd is away")
	}

	for _, m := range []string{"List", "State", "EnsureImage", "Create", "Start", "Stop", "Remove", "Info"} {
		e.rt.setFail(m, nil)
	}
	poll(t, "both running after containerd returned", func() bool {
		e.clock.Step(time.Second) // the reconnection's back-off
		n, o := e.st.pod(fresh.UID), e.st.pod(old.UID)
		return n.Status.Phase == v1.PodRunning && condition(n, ConditionRuntimeReachable) == nil &&
			o.Status.ContainerStatuses[0].RestartCount == 1 && condition(o, v1.PodReady).Status == v1.ConditionTrue
	})
	if e.st.has("Failed") {
		t.Errorf("the outage was charged to a container: %v", e.st.events)
	}
}

// A start that meets an unreachable runtime is not the container's fault:
// no waiting reason, no event, no back-off.
func TestUnavailableStartIsNotCharged(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.rt.setFail("EnsureImage", fmt.Errorf("%w: eof", ErrRuntimeUnavailable))
	e.step(w)
	if len(w.retry) != 0 || e.st.has("Failed") || e.status(p, "a").State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("retry %v events %v status %+v", w.retry, e.st.events, e.status(p, "a").State)
	}
	e.rt.setFail("EnsureImage", nil)
	e.step(w)
	if len(e.rt.running()) != 1 {
		t.Fatal("not started once the runtime answered")
	}
	if !errors.Is(fmt.Errorf("x: %w", ErrRuntimeUnavailable), ErrRuntimeUnavailable) {
		t.Fatal("sentinel")
	}
}
