package supervise

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// callIndex is the position of call in the fake runtime's calls, -1 if it
// was not made.
func (r *fakeRuntime) callIndex(call string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Index(r.calls, call)
}

// An exited container's restart does not wait for the old container's
// removal: the new one starts first (its task joins the pod's shim while
// the ended task still holds it), then the old one goes in the same step.
// The record names the new run only, so a podvisor killed in between
// finds the old container named by no record and removes it.
func TestWorkerRestartsBeforeRemoving(t *testing.T) {
	e := newEnv(t)
	p := testPod("quick", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	old := e.rt.running()["a"]
	e.rt.exit(old, 137)
	e.step(w)
	cur := e.rt.running()["a"]
	if cur == "" || cur == old {
		t.Fatalf("not restarted at once: %v", e.rt.running())
	}
	start, remove := e.rt.callIndex("Start "+cur), e.rt.callIndex("Remove "+old)
	if start < 0 || remove < 0 || remove < start {
		t.Fatalf("calls %v: want Start %s before Remove %s", e.rt.calls, cur, old)
	}
	if _, ok := e.rt.ctrs[old]; ok {
		t.Errorf("old container %s not removed", old)
	}
	recs, errs := loadRecords(e.s.layout)
	cr := recs[p.UID].Apps["a"]
	if len(errs) > 0 || cr.ID != cur || cr.LastState == nil || cr.LastState.ContainerID != "containerd://"+old || cr.RestartCount != 1 {
		t.Fatalf("record on disk %+v %v", cr, errs)
	}

	// A removal that fails is tried again after errorRetry, before the
	// crash back-off ends; the container waits out its back-off.
	e.rt.setFail("Remove", errTest)
	e.rt.exit(cur, 1)
	wake := e.step(w)
	if _, ok := e.rt.ctrs[cur]; !ok {
		t.Fatal("the container whose removal failed is gone")
	}
	if want := e.clock.Now().Add(errorRetry); !wake.Equal(want) {
		t.Errorf("wake %v after a failed removal, want %v", wake, want)
	}
	e.clock.Step(errorRetry)
	e.step(w)
	e.clock.Step(10*time.Second - errorRetry)
	e.step(w)
	third := e.rt.running()["a"]
	if third == "" || third == cur {
		t.Fatalf("not restarted after the back-off: %v", e.rt.running())
	}
	if recs, _ := loadRecords(e.s.layout); recs[p.UID].Apps["a"].ID != third {
		t.Fatalf("record names %s, want %s", recs[p.UID].Apps["a"].ID, third)
	}
	// podvisor killed here: the next one removes what no record names.
	e.rt.setFail("Remove", nil)
	if _, left, err := e.s.adopt(context.Background()); err != nil || len(left) > 0 {
		t.Fatalf("adopt: %v, left %v", err, left)
	}
	if _, ok := e.rt.ctrs[cur]; ok {
		t.Errorf("adoption kept %s, which no record names", cur)
	}
	if e.rt.running()["a"] != third {
		t.Errorf("running %v, want a = %s", e.rt.running(), third)
	}
	// Or the worker's next step removes it.
	e.rt.setFail("Remove", errTest)
	e.rt.exit(third, 1)
	e.step(w)
	e.rt.setFail("Remove", nil)
	e.clock.Step(errorRetry)
	e.step(w)
	if _, ok := e.rt.ctrs[third]; ok {
		t.Errorf("%s not removed by the retry", third)
	}
}

// A pod being removed removes its exited containers at once, as before:
// nothing waits for a start that will not come.
func TestWorkerStopRemovesExitedAtOnce(t *testing.T) {
	e := newEnv(t)
	p := testPod("gone", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["a"]
	e.rt.exit(id, 0)
	if _, finished := e.stopStep(w); !finished {
		t.Fatal("worker did not finish")
	}
	if len(e.rt.ctrs) != 0 || e.rt.count("Create") != 1 {
		t.Errorf("containers %v, creates %d", e.rt.ctrs, e.rt.count("Create"))
	}
}
