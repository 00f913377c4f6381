package supervise

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// One container that cannot be removed does not hold up the others, nor
// its own restart: their exits are recorded and they restart, and the
// removal is retried.
func TestWorkerRemoveFailureIsPerContainer(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a", "b")
	w := e.worker(p)
	e.step(w)
	a, b := e.rt.running()["a"], e.rt.running()["b"]
	e.rt.setFail("Remove "+a, errTest)
	e.rt.exit(a, 1)
	e.rt.exit(b, 1)
	wake := e.step(w)
	if w.rec.Apps["b"].RestartCount != 1 || e.rt.running()["b"] == "" {
		t.Fatalf("b was held up by a: %+v", w.rec.Apps["b"])
	}
	if cr := w.rec.Apps["a"]; cr.RestartCount != 1 || cr.LastState == nil || e.rt.running()["a"] == "" {
		t.Fatalf("a's exit not recorded or a not restarted: %+v", cr)
	}
	if _, ok := e.rt.ctrs[a]; !ok {
		t.Fatal("a's old container, which could not be removed, is gone")
	}
	if want := e.clock.Now().Add(errorRetry); !wake.Equal(want) {
		t.Errorf("wake %v, want a retry at %v", wake, want)
	}
	e.rt.setFail("Remove "+a, nil)
	e.clock.Step(errorRetry)
	e.step(w)
	if _, ok := e.rt.ctrs[a]; ok {
		t.Fatal("a's old container not removed once removable")
	}
	if _, ok := e.rt.ctrs[b]; ok {
		t.Fatal("b's old container not removed")
	}
}

// An exit that cannot be written to the record keeps its container: the
// container is the only proof of the exit until the record holds it.
func TestWorkerExitNotSavedKeepsContainer(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyNever, []string{"i"}, "a")
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["i"]
	rec := e.s.layout.RecordFile(string(p.UID))
	os.Remove(rec)
	os.MkdirAll(filepath.Join(rec, "x"), 0o755) // no rename can replace it
	e.rt.exit(id, 0)
	for range 2 {
		e.step(w)
		if _, ok := e.rt.ctrs[id]; !ok {
			t.Fatal("the container went before its exit was saved")
		}
	}
	os.RemoveAll(rec)
	e.step(w)
	if _, ok := e.rt.ctrs[id]; ok {
		t.Fatal("the container stays after its exit was saved")
	}
	var onDisk podRecord
	b, _ := os.ReadFile(rec)
	if json.Unmarshal(b, &onDisk) != nil || !onDisk.Init["i"].Done {
		t.Fatalf("record on disk: %s", b)
	}
}

// A failing sandbox step is retried as kubelet retries a failed sync:
// about every 10 s, not on a growing back-off (CNI config often comes
// late during a kubeadm bootstrap).
func TestWorkerSandboxRetryDoesNotGrow(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.net.addErr = errTest
	for i := range 8 {
		wake := e.step(w)
		if d := wake.Sub(e.clock.Now()); d < 10*time.Second || d > 15*time.Second {
			t.Fatalf("retry %d after %v, want 10–15 s", i, d)
		}
		// A relist before then (here every 2 s) tries nothing.
		adds := e.net.adds
		for e.clock.Now().Add(2 * time.Second).Before(wake) {
			e.clock.Step(2 * time.Second)
			e.step(w)
		}
		if e.net.adds != adds {
			t.Fatalf("a relist retried CNI ADD before its back-off ended (%d → %d)", adds, e.net.adds)
		}
		e.clock.Step(wake.Sub(e.clock.Now()))
	}
	// A stopping supervisor's cancelled step is no sandbox failure.
	events := len(e.st.events)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.step(ctx)
	if len(e.st.events) != events {
		t.Errorf("a cancelled step reported %v", e.st.events[events:])
	}
}

// A pod whose containers' state cannot be read still stops: the clean-up
// kills and removes every container with its label.
func TestWorkerStopsWhileStateFails(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	e.rt.setFail("State", errTest)
	if _, finished := e.stopStep(w); !finished {
		t.Fatal("the pod did not stop")
	}
	if len(e.rt.ctrs) != 0 || e.rt.count("Stop") > 3 {
		t.Errorf("containers %v, %d stops", e.rt.ctrs, e.rt.count("Stop"))
	}
}

// A lost sandbox is replaced even when killing a container in it fails.
func TestWorkerLostSandboxKillFailure(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	old := w.rec.Sandbox.ID
	e.sbx.lose()
	e.rt.setFail("Stop", errTest)
	e.step(w)
	if w.rec.Sandbox == nil || w.rec.Sandbox.ID == old {
		t.Fatalf("sandbox not replaced: %+v", w.rec.Sandbox)
	}
}

// A record without a spec (hand-edited, or an older format) is stopped
// from a placeholder spec, not a crash.
func TestRecordWithoutSpecIsStopped(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	b, _ := os.ReadFile(e.s.layout.RecordFile(string(p.UID)))
	var raw map[string]any
	json.Unmarshal(b, &raw)
	delete(raw, "pod")
	b, _ = json.Marshal(raw)
	os.WriteFile(e.s.layout.RecordFile(string(p.UID)), b, 0o600)
	recs, errs := loadRecords(e.s.layout)
	if len(errs) > 0 || recs[p.UID].Pod == nil {
		t.Fatalf("records %v, %v", recs, errs)
	}
	w2 := newPodWorker(&e.s.workerDeps, p.UID, nil, recs[p.UID])
	w2.stopping = true
	if _, finished := w2.step(context.Background()); !finished || len(e.rt.ctrs) != 0 {
		t.Fatalf("finished %v, containers %v", finished, e.rt.ctrs)
	}
}

// A pod being stopped when podvisor itself stops finishes its stop (within
// a bound) instead of leaving half-removed containers behind.
func TestStopOutlivesSupervisorStop(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	ctx, cancel := context.WithCancel(context.Background())
	go w.run(ctx)
	poll(t, "running", func() bool { return e.runningCount() == 1 })
	e.rt.setFail("Stop", errTest)
	w.inbox.send(stopMsg{})
	poll(t, "a stop attempt", func() bool { return e.rt.count("Stop") > 0 })
	e.rt.setFail("Stop", nil)
	cancel() // podvisor stops while the pod's stop waits for its retry
	poll(t, "the worker to end", func() bool {
		select {
		case <-w.done:
			return true
		default:
			e.clock.Step(errorRetry) // fires the retry, wherever it waits
			return false
		}
	})
	if len(e.rt.ctrs) != 0 || e.st.pod(p.UID) != nil {
		t.Fatalf("the stop was cut short: containers %v", e.rt.ctrs)
	}
	// A worker that is not stopping ends with its context.
	w2 := e.worker(testPod("other", v1.RestartPolicyAlways, nil, "a"))
	ctx2, cancel2 := context.WithCancel(context.Background())
	go w2.run(ctx2)
	poll(t, "other running", func() bool { return e.runningCount() == 1 })
	cancel2()
	<-w2.done
	if e.runningCount() != 1 {
		t.Fatal("ending the loop stopped the pod")
	}
}

// Output the log driver dropped (a full log filesystem) is one Warning
// event each time more was dropped, read when the driver rewrote its
// status (a dropsMsg), not at every step.
func TestLogDroppedEvent(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	logPath := w.logPath(p, "a", 0)
	os.MkdirAll(filepath.Dir(logPath), 0o755)
	write := func(lines int) {
		b, _ := json.Marshal(map[string]any{"lines": lines, "bytes": lines * 10, "since": e.clock.Now(), "reason": "write: no space left on device"})
		os.WriteFile(logPath+".dropped", b, 0o644)
		w.inbox.send(dropsMsg{})
	}
	write(5)
	e.step(w)
	e.step(w)
	count := func() int {
		n := 0
		for _, ev := range e.st.events {
			if strings.HasPrefix(ev, "LogDropped:") {
				n++
			}
		}
		return n
	}
	if count() != 1 || !strings.Contains(strings.Join(e.st.events, "\n"), "5 lines") {
		t.Fatalf("events %v", e.st.events)
	}
	write(9)
	e.step(w)
	if count() != 2 {
		t.Fatalf("more drops, events %v", e.st.events)
	}
}
