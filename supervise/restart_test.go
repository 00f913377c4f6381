package supervise

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// crashUntilWaiting makes w's container "a" crash until its back-off wait
// is want, and returns the wait's end.
func (e *env) crashUntilWaiting(p *v1.Pod, w *podWorker, want time.Duration) time.Time {
	e.t.Helper()
	wake := e.step(w)
	for range 10 {
		id := e.rt.running()["a"]
		if id == "" {
			e.t.Fatalf("a not running: %v", e.rt.running())
		}
		e.rt.exit(id, 1)
		wake = e.step(w)
		if e.rt.running()["a"] == "" {
			if wake.Sub(e.clock.Now()) == want {
				return wake
			}
			e.clock.Step(wake.Sub(e.clock.Now()))
			e.step(w)
		}
	}
	e.t.Fatalf("back-off never reached %s", want)
	return time.Time{}
}

func (e *env) events() []string {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	return append([]string(nil), e.st.events...)
}

// A restart of a container waiting out a 40 s back-off starts it at once,
// and its next crash waits 10 s again, as a fresh back-off.
func TestWorkerRestartResetsBackoff(t *testing.T) {
	e := newEnv(t)
	p := testPod("crash", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.crashUntilWaiting(p, w, 40*time.Second)
	if cs := e.status(p, "a"); cs.State.Waiting == nil || !strings.Contains(cs.State.Waiting.Message, "back-off 40s") {
		t.Fatalf("not in a 40 s back-off: %+v", cs.State)
	}
	restarts := e.status(p, "a").RestartCount

	w.inbox.send(restartMsg{})
	e.step(w)
	id := e.rt.running()["a"]
	if id == "" {
		t.Fatal("restart did not start the container at once")
	}
	if got := e.status(p, "a").RestartCount; got != restarts+1 {
		t.Errorf("restartCount %d, want %d", got, restarts+1)
	}
	e.rt.exit(id, 1)
	wake := e.step(w)
	if e.rt.running()["a"] != "" {
		t.Fatal("the crash after the restart was restarted at once")
	}
	if got := wake.Sub(e.clock.Now()); got != 10*time.Second {
		t.Errorf("back-off after the restart %s, want 10s", got)
	}
	if cs := e.status(p, "a"); cs.State.Waiting == nil || !strings.Contains(cs.State.Waiting.Message, "back-off 10s") {
		t.Errorf("waiting after the restart's crash: %+v", cs.State.Waiting)
	}
}

// restart -c of a running container stops it as a kill does (the pod's
// grace period, a Killing event saying why) and starts it again; the other
// container keeps its run.
func TestWorkerRestartOneContainer(t *testing.T) {
	e := newEnv(t)
	p := testPod("two", v1.RestartPolicyAlways, nil, "a", "b")
	w := e.worker(p)
	e.step(w)
	before := e.rt.running()

	w.inbox.send(restartMsg{container: "a"})
	e.step(w)
	after := e.rt.running()
	if after["a"] == "" || after["a"] == before["a"] {
		t.Fatalf("a not restarted: before %v after %v", before, after)
	}
	if after["b"] != before["b"] {
		t.Errorf("b was restarted too: before %v after %v", before, after)
	}
	if g := e.rt.graces[before["a"]]; g != 2*time.Second {
		t.Errorf("a stopped with grace %s, want the pod's (2 s minimum)", g)
	}
	killing := ""
	for _, ev := range e.events() {
		if strings.HasPrefix(ev, "Killing: ") {
			killing = ev
		}
	}
	if killing != "Killing: Stopping container a: "+RestartReason {
		t.Errorf("Killing event %q", killing)
	}
	if cs := e.status(p, "a"); cs.RestartCount != 1 || cs.State.Running == nil {
		t.Errorf("a after the restart: %+v", cs)
	}
	if cs := e.status(p, "b"); cs.RestartCount != 0 {
		t.Errorf("b restartCount %d", cs.RestartCount)
	}
	// Done: a later step restarts nothing.
	e.step(w)
	if got := e.rt.running(); got["a"] != after["a"] {
		t.Errorf("restarted again: %v", got)
	}
}

// Under restartPolicy Never a restart still runs the container again (the
// pod is not finished by the kill), and only once.
func TestWorkerRestartNever(t *testing.T) {
	e := newEnv(t)
	p := testPod("never", v1.RestartPolicyNever, nil, "a")
	w := e.worker(p)
	e.step(w)
	first := e.rt.running()["a"]
	w.inbox.send(restartMsg{container: "a"})
	e.step(w)
	second := e.rt.running()["a"]
	if second == "" || second == first {
		t.Fatalf("not restarted: %v", e.rt.running())
	}
	if e.phase(p) != v1.PodRunning {
		t.Errorf("phase %s", e.phase(p))
	}
	e.rt.exit(second, 1)
	e.step(w)
	if e.rt.running()["a"] != "" || e.phase(p) != v1.PodFailed {
		t.Errorf("after its exit: running %v, phase %s", e.rt.running(), e.phase(p))
	}
}

// A stopping pod drops a restart request that arrives after it was checked.
func TestWorkerRestartWhileStopping(t *testing.T) {
	e := newEnv(t)
	p := testPod("stop", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	w.inbox.send(stopMsg{})
	w.inbox.send(restartMsg{})
	w.receive(w.inbox.take())
	if len(w.restarts) != 0 {
		t.Errorf("restart taken while stopping: %v", w.restarts)
	}
}

func TestCheckRestart(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	spec := testPod("web", v1.RestartPolicyNever, []string{"setup"}, "app")
	spec.Spec.InitContainers = append(spec.Spec.InitContainers, v1.Container{Name: "side", RestartPolicy: &always})
	now := metav1.Now()
	shown := func(phase v1.PodPhase, deleting bool) *v1.Pod {
		p := spec.DeepCopy()
		p.Status.Phase = phase
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	evicted := shown(v1.PodFailed, false)
	evicted.Status.Reason, evicted.Status.Message = ReasonEvicted, "low on memory"
	evicted.Status.Conditions = nodeStopConditions(nil, &nodeStopRecord{Message: "low on memory"})
	for _, tc := range []struct {
		name      string
		shown     *v1.Pod
		container string
		want      error
		msg       string
	}{
		{name: "all", shown: shown(v1.PodRunning, false)},
		{name: "not published yet", container: "app"},
		{name: "app", shown: shown(v1.PodRunning, false), container: "app"},
		{name: "sidecar", shown: shown(v1.PodRunning, false), container: "side"},
		{name: "init", shown: shown(v1.PodRunning, false), container: "setup", want: ErrNoContainer, msg: "is an init container"},
		{name: "unknown", shown: shown(v1.PodRunning, false), container: "nope", want: ErrNoContainer, msg: "its containers: side, app"},
		{name: "terminating", shown: shown(v1.PodRunning, true), want: ErrNotRestartable, msg: "terminating"},
		{name: "succeeded", shown: shown(v1.PodSucceeded, false), want: ErrNotRestartable, msg: "completed (phase Succeeded, restartPolicy Never)"},
		{name: "failed", shown: shown(v1.PodFailed, false), container: "app", want: ErrNotRestartable, msg: "phase Failed"},
		{name: "evicted", shown: evicted, want: ErrNotRestartable, msg: "the node stopped it (Evicted: low on memory); it starts again by itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRestart(spec, tc.shown, tc.container)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q lacks %q", err, tc.msg)
			}
		})
	}
}

func TestSupervisorRestartUnknownPod(t *testing.T) {
	e := newEnv(t)
	if err := e.s.Restart(context.Background(), "nope", ""); !errors.Is(err, ErrPodNotFound) {
		t.Errorf("err %v, want ErrPodNotFound", err)
	}
}
