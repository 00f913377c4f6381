package supervise

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A runtime error at each step of a start before the container exists:
// the container shows why, an event says so, nothing is left half-made,
// and the start is retried with its back-off. (A start the runtime refuses
// once the container exists is a run: starterror_test.go.)
func TestWorkerStartErrors(t *testing.T) {
	for _, tc := range []struct {
		method, reason string
	}{
		{"EnsureImage", "ErrImagePull"},
		{"Create", "CreateContainerError"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			e := newEnv(t)
			p := testPod("web", v1.RestartPolicyAlways, nil, "a", "b")
			w := e.worker(p)
			e.rt.setFail(tc.method, errTest)
			wake := e.step(w)
			cs := e.status(p, "a")
			if cs.State.Waiting == nil || cs.State.Waiting.Reason != tc.reason || !strings.Contains(cs.State.Waiting.Message, "injected") {
				t.Fatalf("waiting = %+v, want %s", cs.State.Waiting, tc.reason)
			}
			if !e.st.has("Failed") {
				t.Errorf("no Failed event: %v", e.st.events)
			}
			if len(e.rt.ctrs) != 0 || w.rec.Apps["a"].ID != "" {
				t.Errorf("half-made container left: %v, record ID %q", e.rt.ctrs, w.rec.Apps["a"].ID)
			}
			if wake.IsZero() || wake.Sub(e.clock.Now()) < 9*time.Second || wake.Sub(e.clock.Now()) > 12*time.Second {
				t.Errorf("retry at %v from now, want about 10s", wake.Sub(e.clock.Now()))
			}
			// Before the retry: nothing is tried again.
			e.rt.setFail(tc.method, nil)
			e.clock.Step(time.Second)
			e.step(w)
			if len(e.rt.running()) != 0 {
				t.Fatal("retried before its back-off")
			}
			if tc.method == "EnsureImage" && e.status(p, "a").State.Waiting.Reason != "ImagePullBackOff" {
				t.Errorf("waiting %+v, want ImagePullBackOff", e.status(p, "a").State.Waiting)
			}
			e.clock.Step(12 * time.Second)
			e.step(w)
			if len(e.rt.running()) != 2 {
				t.Fatalf("not started after the retry: %v", e.rt.running())
			}
			if e.status(p, "a").RestartCount != 0 {
				t.Errorf("a failed start counted as a restart")
			}
		})
	}
}

// An image archive that arrives ends an image pull's back-off at once.
func TestWorkerImageArrivalEndsPullBackoff(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.rt.setFail("EnsureImage", errTest)
	e.step(w)
	e.rt.setFail("EnsureImage", nil)
	e.s.ImagesImported()
	e.step(w)
	if len(e.rt.running()) != 1 {
		t.Fatal("new images did not end the pull back-off")
	}
}

// A failed removal of a half-made container keeps its ID: the next step
// removes it instead of starting a second copy beside it. (containerd
// went away during the start: no run.)
func TestWorkerUndoFailureKeepsID(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.rt.setFail("Start", fmt.Errorf("%w: %w", ErrRuntimeUnavailable, errTest))
	e.rt.setFail("Remove", errTest)
	e.step(w)
	id := w.rec.Apps["a"].ID
	if id == "" {
		t.Fatal("the ID of a container that could not be removed was forgotten")
	}
	e.rt.setFail("Start", nil)
	e.rt.setFail("Remove", nil)
	e.step(w)
	if _, ok := e.rt.ctrs[id]; ok {
		t.Error("the half-made container is still there")
	}
	e.clock.Step(15 * time.Second)
	e.step(w)
	if n := len(e.rt.running()); n != 1 {
		t.Fatalf("running %d containers, want 1", n)
	}
}

// State errors are no exits; a failed removal of an exited container
// holds up neither its recorded exit nor its restart, and is retried.
func TestWorkerObserveErrors(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["a"]
	e.rt.setFail("State", errTest)
	e.step(w)
	if w.rec.Apps["a"].ID != id || w.rec.Apps["a"].Terminated != nil || e.rt.count("Create") != 1 {
		t.Fatal("a state error was taken for an exit")
	}
	e.rt.setFail("State", nil)
	e.rt.exit(id, 7)
	e.rt.setFail("Remove", errTest)
	wake := e.step(w)
	cr := w.rec.Apps["a"]
	if cr.RestartCount != 1 || cr.LastState == nil || cr.LastState.ExitCode != 7 || cr.ID == id || cr.ID == "" {
		t.Fatalf("record %+v", cr)
	}
	if _, ok := e.rt.ctrs[id]; !ok {
		t.Fatal("the container that could not be removed is gone")
	}
	if want := e.clock.Now().Add(errorRetry); !wake.Equal(want) {
		t.Errorf("wake %v, want %v", wake, want)
	}
	// The exit is on disk before the container that proves it goes.
	recs, _ := loadRecords(e.s.layout)
	if ls := recs[p.UID].Apps["a"].LastState; ls == nil || ls.ExitCode != 7 {
		t.Error("exit not saved before removal")
	}
	e.rt.setFail("Remove", nil)
	e.clock.Step(errorRetry)
	e.step(w)
	if _, ok := e.rt.ctrs[id]; ok {
		t.Error("the exited container was not removed by the retry")
	}
	if cr := w.rec.Apps["a"]; cr.RestartCount != 1 || cr.LastState == nil || cr.LastState.ExitCode != 7 {
		t.Errorf("after the retried removal: %+v", cr)
	}
}

// A failed stop keeps the worker; it retries and then finishes.
func TestWorkerTerminateErrors(t *testing.T) {
	for _, method := range []string{"Stop", "List", "Remove"} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t)
			p := testPod("web", v1.RestartPolicyAlways, nil, "a")
			w := e.worker(p)
			e.step(w)
			e.rt.setFail(method, errTest)
			wake, finished := e.stopStep(w)
			if finished {
				t.Fatal("finished although the stop failed")
			}
			if want := e.clock.Now().Add(errorRetry); !wake.Equal(want) {
				t.Errorf("wake %v, want %v", wake, want)
			}
			if pod := e.st.pod(p.UID); pod == nil || pod.DeletionTimestamp == nil {
				t.Error("a pod being stopped is not shown as Terminating")
			}
			e.rt.setFail(method, nil)
			if _, finished := w.step(context.Background()); !finished {
				t.Fatal("not finished after the error went")
			}
		})
	}
}

// A container that will not die is not forgotten: the step ends, and the
// next one tries again.
func TestWorkerStuckContainer(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	e.rt.stopIgnores = true
	wake, finished := e.stopStep(w)
	if finished || wake.IsZero() {
		t.Fatalf("finished %v wake %v with a container still running", finished, wake)
	}
	if len(e.rt.running()) != 1 {
		t.Fatal("container gone")
	}
}

func TestWorkerSandboxErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(e *env)
		clear  func(e *env)
		want   string
	}{
		{"namespaces", func(e *env) { e.sbx.createErr = errTest }, func(e *env) { e.sbx.createErr = nil }, "injected"},
		{"cni", func(e *env) { e.net.addErr = errTest }, func(e *env) { e.net.addErr = nil }, "cni add"},
		{"cgroup", func(e *env) { e.s.cg.root = "/proc/self/no-cgroups" }, func(e *env) { e.s.cg.root = e.cgRoot() }, "pod cgroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p := testPod("web", v1.RestartPolicyAlways, nil, "a")
			w := e.worker(p)
			tc.inject(e)
			wake := e.step(w)
			if !e.st.has("FailedCreatePodSandBox") || !strings.Contains(strings.Join(e.st.events, "\n"), tc.want) {
				t.Fatalf("events %v", e.st.events)
			}
			if len(e.rt.ctrs) != 0 {
				t.Fatal("a container started without its sandbox")
			}
			if e.status(p, "a").State.Waiting.Reason != "ContainerCreating" || e.phase(p) != v1.PodPending {
				t.Errorf("status %+v", e.status(p, "a").State)
			}
			if wake.IsZero() {
				t.Fatal("no retry")
			}
			tc.clear(e)
			e.clock.Step(wake.Sub(e.clock.Now()))
			e.step(w)
			if len(e.rt.running()) != 1 {
				t.Fatal("not started after the sandbox was repaired")
			}
		})
	}
}

func (e *env) cgRoot() string { return filepath.Join(filepath.Dir(e.s.layout.StateDir), "cgroup") }

// A record that cannot be written before the container is created stops
// the start: no container exists that no record names.
func TestWorkerRecordWriteFailure(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	// The record's path is a directory that holds a file: no rename can
	// replace it.
	os.MkdirAll(filepath.Join(e.s.layout.RecordFile(string(p.UID)), "x"), 0o755)
	e.step(w)
	if e.rt.count("Create") != 0 {
		t.Fatal("created a container whose ID is not recorded")
	}
	if cs := e.status(p, "a"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" {
		t.Errorf("status %+v", cs.State)
	}
}

// Adoption: a container podvisor started but did not record as started
// gets its start time and restart count from its labels.
func TestWorkerAdoptsUnrecordedStart(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	id := e.rt.running()["a"]
	e.rt.ctrs[id].info.Labels[LabelRestartCount] = "3"
	w.rec.Apps["a"].StartedAt = time.Time{}
	w.rec.Apps["a"].Terminated = exitedRec(1).Terminated
	e.step(w)
	cr := w.rec.Apps["a"]
	if cr.StartedAt.IsZero() || cr.RestartCount != 3 || cr.LastState == nil || cr.Terminated != nil {
		t.Fatalf("adopted record %+v", cr)
	}
	e.rt.setFail("Info", errTest)
	cr.StartedAt = time.Time{}
	e.step(w)
	if cr.StartedAt.IsZero() {
		t.Error("no start time when the labels cannot be read")
	}
}

// OOM kills are told by the event or by the cgroup's count.
func TestWorkerOOMKilled(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyNever, nil, "a", "b")
	w := e.worker(p)
	e.step(w)
	a, b := e.rt.running()["a"], e.rt.running()["b"]
	w.inbox.send(oomMsg{containerID: a})
	// b's cgroup counts a kill (cgroup v1 layout).
	dir := filepath.Join(e.cgRoot(), "memory", w.podCgroup(), b)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"), 0o644)
	e.rt.exit(a, 137)
	e.rt.exit(b, 137)
	e.step(w)
	for _, n := range []string{"a", "b"} {
		if st := e.status(p, n).State.Terminated; st == nil || st.Reason != "OOMKilled" {
			t.Errorf("%s: %+v", n, st)
		}
	}
}

// Termination messages come from the file, else from the log's tail with
// FallbackToLogsOnError.
func TestWorkerTerminationMessage(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyNever, nil, "a", "b")
	p.Spec.Containers[1].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	w := e.worker(p)
	e.step(w)
	a, b := e.rt.running()["a"], e.rt.running()["b"]
	os.WriteFile(e.s.layout.TerminationLog(string(p.UID), a), []byte("bye"), 0o644)
	logPath := w.logPath(p, "b", 0)
	os.MkdirAll(filepath.Dir(logPath), 0o755)
	os.WriteFile(logPath, []byte("2026-01-01T00:00:00.000000000Z stderr F it broke\n"), 0o644)
	e.rt.exit(a, 0)
	e.rt.exit(b, 2)
	e.step(w)
	if m := e.status(p, "a").State.Terminated.Message; m != "bye" {
		t.Errorf("a's message %q", m)
	}
	if m := e.status(p, "b").State.Terminated.Message; m != "it broke\n" {
		t.Errorf("b's message %q", m)
	}
	if _, err := os.Stat(e.s.layout.TerminationDir(string(p.UID), a)); !os.IsNotExist(err) {
		t.Error("termination dir of a removed container left")
	}
}

// imageGate records the images asked for and answers with err.
type imageGate struct {
	mu    sync.Mutex
	asked []string
	err   error
}

func (g *imageGate) Wait(_ context.Context, image string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, image)
	return g.err
}

// A container's image is looked for only once the images gate lets that
// image go: each container asks for its own image, and one not let go
// (the start-up import still running when podvisor stops) creates nothing.
func TestWorkerWaitsForItsImage(t *testing.T) {
	e := newEnv(t)
	gate := &imageGate{err: context.Canceled}
	e.s.images = gate
	p := testPod("web", v1.RestartPolicyAlways, nil, "a", "b")
	p.Spec.Containers[1].Image = "registry.k8s.io/etcd:3.6.5-0"
	w := e.worker(p)
	e.step(w)
	if len(e.rt.ctrs) != 0 || e.rt.count("EnsureImage") != 0 {
		t.Fatalf("containers %v, %d image look-ups, while the gate holds the image", e.rt.ctrs, e.rt.count("EnsureImage"))
	}
	gate.mu.Lock()
	gate.err, gate.asked = nil, nil
	gate.mu.Unlock()
	e.s.ImagesImported()
	e.step(w)
	if len(e.rt.running()) != 2 {
		t.Fatalf("running %v once the gate let the images go", e.rt.running())
	}
	want := []string{p.Spec.Containers[0].Image, "registry.k8s.io/etcd:3.6.5-0"}
	if !slices.Equal(gate.asked, want) {
		t.Errorf("asked the gate for %q, want %q", gate.asked, want)
	}
}
