package supervise

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// poll waits for cond with a deadline (real time: the supervisor's
// goroutines run on their own).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// running starts e's supervisor on a snapshot channel; the returned stop
// ends it and waits.
func (e *env) run(snaps chan manifest.Snapshot) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := e.s.Run(ctx, snaps); err != nil {
			e.t.Errorf("Run: %v", err)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func snapshot(ps ...*v1.Pod) manifest.Snapshot {
	var s manifest.Snapshot
	for _, p := range ps {
		s.Pods = append(s.Pods, desired(p))
	}
	return s
}

func (e *env) runningCount() int {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	n := 0
	for _, c := range e.rt.ctrs {
		if c.state.Running {
			n++
		}
	}
	return n
}

func TestSupervisorRunsAndStopsPods(t *testing.T) {
	e := newEnv(t)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	a := testPod("a", v1.RestartPolicyAlways, nil, "c")
	b := testPod("b", v1.RestartPolicyAlways, nil, "c")
	snaps <- snapshot(a, b)
	poll(t, "two pods running", func() bool { return e.runningCount() == 2 })

	// An exit event wakes the owner at once: relists are 10 s apart and
	// the fake clock does not move.
	id := e.ctrOf(a.UID)
	e.rt.exit(id, 1)
	e.rt.events <- RuntimeEvent{Type: EventExit, ContainerID: id}
	poll(t, "a restarted", func() bool {
		p := e.st.pod(a.UID)
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1
	})

	// Removing a manifest stops only its pod.
	snaps <- snapshot(b)
	poll(t, "a stopped", func() bool { return e.st.pod(a.UID) == nil && e.runningCount() == 1 })
	if e.st.pod(b.UID) == nil {
		t.Fatal("b went with a")
	}
}

// A changed manifest is a new pod (new UID) of the same name: it starts
// only once the old one is gone, as kubelet does for static pods.
func TestSupervisorReplacesPodOfSameName(t *testing.T) {
	e := newEnv(t)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	old := testPod("web", v1.RestartPolicyAlways, nil, "c")
	snaps <- snapshot(old)
	poll(t, "old running", func() bool { return e.runningCount() == 1 })
	e.rt.mu.Lock()
	e.rt.stopIgnores = true
	e.rt.mu.Unlock()
	next := testPod("web", v1.RestartPolicyAlways, nil, "c")
	next.UID = "uid-web-2"
	snaps <- snapshot(next)
	poll(t, "old terminating", func() bool { p := e.st.pod(old.UID); return p != nil && p.DeletionTimestamp != nil })
	if e.st.pod(next.UID) != nil {
		t.Fatal("the replacement started beside the old pod")
	}
	e.rt.mu.Lock()
	e.rt.stopIgnores = false
	e.rt.mu.Unlock()
	e.clock.Step(errorRetry)
	poll(t, "new running", func() bool {
		p := e.st.pod(next.UID)
		return e.st.pod(old.UID) == nil && p != nil && p.Status.Phase == v1.PodRunning
	})
	// A relist (here, the next snapshot) after that changes nothing.
	creates, states := e.rt.count("Create"), e.rt.count("State")
	snaps <- snapshot(next)
	e.s.wakeAll()
	poll(t, "the worker to look again", func() bool { return e.rt.count("State") > states })
	if e.rt.count("Create") != creates {
		t.Fatal("an unchanged snapshot created a container")
	}
}

// Stopping the supervisor never stops a pod; a new supervisor adopts it
// without a second container, and stops pods whose manifests went.
func TestSupervisorAdoptsAfterRestart(t *testing.T) {
	e := newEnv(t)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	keep := testPod("keep", v1.RestartPolicyAlways, nil, "c")
	gone := testPod("gone", v1.RestartPolicyAlways, nil, "c")
	snaps <- snapshot(keep, gone)
	poll(t, "two pods", func() bool { return e.runningCount() == 2 })
	stop()
	if e.runningCount() != 2 {
		t.Fatal("stopping the supervisor stopped pods")
	}
	keepID := e.ctrOf(keep.UID)
	// A container that no record names (a crash between create and
	// record) and one of a pod whose record is lost.
	e.rt.addLabelled("stray", map[string]string{LabelPodUID: string(keep.UID), LabelContainer: "c"}, ContainerState{Exists: true, HasTask: true, Running: true})
	e.rt.addLabelled("orphan", map[string]string{LabelPodUID: "uid-lost", LabelPodName: "lost-node1", LabelPodNamespace: "default",
		LabelContainer: "c", LabelContainerType: containerTypeApp, LabelSandboxID: "sbx-lost"}, ContainerState{Exists: true, HasTask: true, Running: true})

	e2 := *e
	e2.s = New(e.s.opts)
	snaps2 := make(chan manifest.Snapshot, 1)
	stop2 := e2.run(snaps2)
	defer stop2()
	snaps2 <- snapshot(keep)
	// The stray container, the orphan and gone's container go; keep's
	// stays.
	poll(t, "gone and lost stopped", func() bool {
		e.rt.mu.Lock()
		_, orphan := e.rt.ctrs["orphan"]
		_, stray := e.rt.ctrs["stray"]
		n := len(e.rt.ctrs)
		e.rt.mu.Unlock()
		return !orphan && !stray && n == 1 && e.st.pod(gone.UID) == nil
	})
	if id := e.ctrOf(keep.UID); id != keepID {
		t.Fatalf("keep runs %s, not its adopted %s", id, keepID)
	}
	p := e.st.pod(keep.UID)
	if p == nil || p.Status.Phase != v1.PodRunning || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("adopted pod %+v", p)
	}
	if !e.net.gcKeep[p.Name] && len(e.net.gcKeep) == 0 {
		t.Error("no CNI garbage collection at start")
	}
}

// The record of a pod whose state dir was lost is rebuilt from labels.
func TestRecordFromLabels(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	r := e.s.recordFromLabels([]ContainerInfo{
		{ID: "i", CreatedAt: now.Add(-2 * time.Minute), Labels: map[string]string{LabelPodUID: "u", LabelPodName: "p-n", LabelPodNamespace: "ns",
			LabelContainer: "init", LabelContainerType: containerTypeInit, LabelRestartCount: "0", LabelSandboxID: "sb1"}},
		{ID: "a", CreatedAt: now.Add(-time.Minute), Labels: map[string]string{LabelPodUID: "u", LabelPodName: "p-n", LabelPodNamespace: "ns",
			LabelContainer: "app", LabelContainerType: containerTypeApp, LabelRestartCount: "4", LabelSandboxID: "sb1"}},
	})
	if r.UID != "u" || r.fullName() != "ns/p-n" || !r.Created.Equal(now.Add(-2*time.Minute)) {
		t.Errorf("identity %+v", r)
	}
	if r.Apps["app"].RestartCount != 4 || !r.Init["init"].Done || r.Sandbox == nil || r.Sandbox.ID != "sb1" {
		t.Errorf("containers %+v %+v sandbox %+v", r.Apps["app"], r.Init["init"], r.Sandbox)
	}
	if len(r.Pod.Spec.Containers) != 1 || len(r.Pod.Spec.InitContainers) != 1 {
		t.Errorf("placeholder spec %+v", r.Pod.Spec)
	}
}

// Sandboxes and cgroups that no record names are collected at start.
func TestSupervisorSweepsLeftovers(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(e.s.layout.SandboxDir("leaked"), 0o755)
	cg := filepath.Join(e.cgRoot(), "cpu", "podvisor", "podleaked")
	os.MkdirAll(filepath.Join(cg, "ctr"), 0o755)
	if _, left, err := e.s.adopt(context.Background()); err != nil || len(left) != 0 {
		t.Fatal(err, left)
	}
	if len(e.sbx.removed) != 1 || e.sbx.removed[0] != "leaked" {
		t.Errorf("sandboxes removed %v", e.sbx.removed)
	}
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("leaked cgroup kept: %v", err)
	}
	e.rt.setFail("List", errTest)
	if _, _, err := e.s.adopt(context.Background()); !errors.Is(err, errTest) {
		t.Errorf("adopt with a failing list = %v", err)
	}
}

// The event stream breaking is reported unhealthy, resubscribed, and every
// worker woken (exits may have been missed).
func TestSupervisorEventStreamBreaks(t *testing.T) {
	e := newEnv(t)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	p := testPod("web", v1.RestartPolicyAlways, nil, "c")
	snaps <- snapshot(p)
	poll(t, "running", func() bool { return e.runningCount() == 1 })
	id := e.rt.running()["c"]
	e.rt.exit(id, 1) // no event for this exit
	e.rt.errs <- errors.New("stream broke")
	poll(t, "unhealthy", func() bool { e.st.mu.Lock(); defer e.st.mu.Unlock(); return e.st.health != nil })
	poll(t, "resubscribed", func() bool {
		e.clock.Step(time.Second) // the resubscription's back-off
		return e.rt.count("Events") >= 2
	})
	poll(t, "restart after resubscribing", func() bool {
		pod := e.st.pod(p.UID)
		return pod.Status.ContainerStatuses[0].RestartCount == 1
	})
	poll(t, "healthy", func() bool { e.st.mu.Lock(); defer e.st.mu.Unlock(); return e.st.health == nil })
	// An OOM event marks the container.
	id = e.rt.running()["c"]
	e.rt.events <- RuntimeEvent{Type: EventOOM, ContainerID: id}
	e.rt.exit(id, 137)
	e.rt.events <- RuntimeEvent{Type: EventExit, ContainerID: id}
	poll(t, "OOMKilled", func() bool {
		pod := e.st.pod(p.UID)
		lt := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
		return lt != nil && lt.Reason == "OOMKilled"
	})
}

func TestReportManifestErrors(t *testing.T) {
	e := newEnv(t)
	p := desired(testPod("web", v1.RestartPolicyAlways, nil, "c"))
	p.Err = errTest
	snap := manifest.Snapshot{
		Pods:     []*manifest.Pod{p},
		Errors:   []*manifest.FileError{{Path: p.Path, Reason: "bad"}, {Path: "/other.yaml", Reason: "worse"}},
		Warnings: []*manifest.FileError{{Path: "/w.yaml", Reason: "world-writable"}},
	}
	reported := e.s.reportManifestErrors(nil, snap)
	if len(e.st.events) != 3 || !e.st.has("InvalidManifest") || !e.st.has("ManifestWarning") {
		t.Fatalf("events %v", e.st.events)
	}
	e.s.reportManifestErrors(reported, snap)
	if len(e.st.events) != 3 {
		t.Errorf("the same errors were reported again: %v", e.st.events)
	}
}

// The worker loop: a message wakes it, a back-off's timer wakes it, and
// its context ends it.
func TestWorkerLoop(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "c")
	w := e.worker(p)
	ctx, cancel := context.WithCancel(context.Background())
	go w.run(ctx)
	poll(t, "started", func() bool { return e.runningCount() == 1 })
	first := e.rt.running()["c"]
	e.rt.exit(first, 1)
	w.inbox.send(wakeMsg{})
	poll(t, "restart 1", func() bool { id := e.rt.running()["c"]; return id != "" && id != first })
	e.rt.exit(e.rt.running()["c"], 1)
	w.inbox.send(wakeMsg{})
	poll(t, "back-off timer armed", func() bool { return e.clock.timers() == 1 })
	e.clock.Step(10 * time.Second)
	poll(t, "restart 2 by the timer", func() bool { return e.rt.count("Start") == 3 })
	cancel()
	<-w.done
	if e.runningCount() != 1 {
		t.Fatal("ending the loop stopped the pod")
	}
	// A stop message ends the worker after cleaning up.
	w2 := newPodWorker(&e.s.workerDeps, p.UID, desired(p), w.rec)
	go w2.run(context.Background())
	w2.inbox.send(stopMsg{})
	<-w2.done
	if e.runningCount() != 0 {
		t.Fatal("stop left containers")
	}
}

func TestInboxLatestSpecWins(t *testing.T) {
	b := newInbox()
	p1, p2 := desired(testPod("a", "", nil, "c")), desired(testPod("b", "", nil, "c"))
	b.send(specMsg{pod: p1})
	b.send(oomMsg{containerID: "x"})
	b.send(wakeMsg{})
	b.send(specMsg{pod: p2})
	b.send(stopMsg{})
	got := b.take()
	want := []message{oomMsg{containerID: "x"}, specMsg{pod: p2}, stopMsg{}}
	if len(got) != len(want) {
		t.Fatalf("took %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d = %#v, want %#v", i, got[i], want[i])
		}
	}
	if len(b.take()) != 0 {
		t.Error("take did not empty the box")
	}
	select {
	case <-b.signal:
	default:
		t.Error("no signal")
	}
	var _ types.UID
}

// ctrOf returns the ID of the running container of pod uid.
func (e *env) ctrOf(uid types.UID) string {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	for id, c := range e.rt.ctrs {
		if c.state.Running && c.cfg.Labels[LabelPodUID] == string(uid) {
			return id
		}
	}
	return ""
}

// A leftover that cannot be removed at start is retried with back-off
// until it goes.
func TestLeftoversRetried(t *testing.T) {
	e := newEnv(t)
	p := testPod("keep", v1.RestartPolicyAlways, nil, "c")
	w := e.worker(p)
	e.step(w)
	e.rt.addLabelled("stray", map[string]string{LabelPodUID: string(p.UID), LabelContainer: "c"}, ContainerState{Exists: true, HasTask: true, Running: true})
	e.rt.setFail("Remove stray", errTest)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	snaps <- snapshot(p)
	poll(t, "a first try", func() bool { return e.rt.count("Remove stray") >= 1 })
	e.rt.setFail("Remove stray", nil)
	poll(t, "the stray removed by a retry", func() bool {
		e.clock.Step(time.Minute)
		e.rt.mu.Lock()
		defer e.rt.mu.Unlock()
		_, ok := e.rt.ctrs["stray"]
		return !ok
	})
}

// Synced waits for the first snapshot and for each of its pods to be in
// the store: the mirror deletes no mirror of a pod not looked at yet.
func TestSupervisorSynced(t *testing.T) {
	e := newEnv(t)
	if e.s.Synced() {
		t.Fatal("synced before any snapshot")
	}
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	a, b := testPod("a", v1.RestartPolicyAlways, nil, "c"), testPod("b", v1.RestartPolicyAlways, nil, "c")
	snaps <- snapshot(a, b)
	poll(t, "synced", e.s.Synced)
	if e.st.pod(a.UID) == nil || e.st.pod(b.UID) == nil {
		t.Error("synced before every pod of the first snapshot was published")
	}
}

// TestRelistWakesWorkers: with a runtime that cannot list its tasks,
// every relist, on the supervisor's clock, wakes every worker; nothing
// relists before its period has passed on that clock.
func TestRelistWakesWorkers(t *testing.T) {
	e := newEnv(t)
	e.s.opts.RelistPeriod = time.Minute
	p := testPod("web", v1.RestartPolicyAlways, nil, "c")
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- snapshot(p)
	stop := e.run(snaps)
	defer stop()
	poll(t, "started", func() bool { return e.runningCount() == 1 })
	// A container that exits with no event is found by the relist only.
	id := e.rt.running()["c"]
	e.rt.exit(id, 0)
	states := e.rt.count("State")
	e.clock.Step(time.Minute - time.Millisecond)
	if e.rt.count("State") != states {
		t.Fatal("a worker was woken before the relist period passed")
	}
	e.clock.Step(time.Minute)
	poll(t, "the exit found by the relist", func() bool { id2 := e.rt.running()["c"]; return id2 != "" && id2 != id })
}

// TestShimsCollectedAtStartAndRemoval: the shims no container owns are
// looked for once adoption is done (what it removed may have left one)
// and after each pod's removal — a shim left by a start that a killed
// podvisor cut short outlived its pod until an hourly relist — and never
// on the relist's timer (the search walks /proc). A failing round does
// not stop the next.
func TestShimsCollectedAtStartAndRemoval(t *testing.T) {
	e := newEnv(t)
	e.s.opts.RelistPeriod = time.Minute
	e.rt.setFail("CollectShims", errTest)
	a, b := testPod("a", v1.RestartPolicyAlways, nil, "c"), testPod("b", v1.RestartPolicyAlways, nil, "c")
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- snapshot(a, b)
	stop := e.run(snaps)
	defer stop()
	poll(t, "shims collected at start", func() bool { return e.rt.count("CollectShims") == 1 })
	e.rt.mu.Lock()
	calls := slices.Clone(e.rt.calls)
	e.rt.mu.Unlock()
	if first, adopted := slices.Index(calls, "CollectShims "), slices.Index(calls, "List "); adopted < 0 || first < adopted {
		t.Errorf("shims collected before adoption listed the containers: %q", calls)
	}
	poll(t, "started", func() bool { return e.runningCount() == 2 })
	for range 3 {
		e.clock.Step(time.Minute)
	}
	snaps <- snapshot(b)
	poll(t, "shims collected after the removal", func() bool { return e.rt.count("CollectShims") == 2 && e.runningCount() == 1 })
	e.clock.Step(time.Minute)
	if n := e.rt.count("CollectShims"); n != 2 {
		t.Errorf("%d rounds of shim collection, want 2: one at start, one after the removal", n)
	}
}
