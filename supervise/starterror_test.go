package supervise

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// refusingRuntime is the fake runtime refusing to start the containers
// named in refuse (as runc refuses a command not in the image): the
// container stays, created, with no task.
type refusingRuntime struct {
	*fakeRuntime
	refuse map[string]error // by container name
}

func (r *refusingRuntime) Start(ctx context.Context, id, logPath string) error {
	r.mu.Lock()
	c := r.ctrs[id]
	var err error
	if c != nil {
		err = r.refuse[c.cfg.Container.Name]
	}
	r.mu.Unlock()
	if err != nil {
		r.call("Start", id)
		return fmt.Errorf("create task: %w", err)
	}
	return r.fakeRuntime.Start(ctx, id, logPath)
}

// newRefusingEnv is newEnv whose runtime refuses the starts refuse names.
func newRefusingEnv(t *testing.T) (*env, map[string]error) {
	refuse := map[string]error{}
	e := newEnvRuntime(t, func(r *fakeRuntime) Runtime { return &refusingRuntime{fakeRuntime: r, refuse: refuse} })
	return e, refuse
}

// countEvents counts the events of reason whose message has substr.
func (f *fakeStatus) countEvents(reason, substr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, e := range f.events {
		if strings.HasPrefix(e, reason+": ") && strings.Contains(e, substr) {
			n++
		}
	}
	return n
}

// isStartError reports whether t is a run the runtime refused to start,
// as containerd's CRI records it and kubelet shows it.
func isStartError(t *v1.ContainerStateTerminated) bool {
	return t != nil && t.Reason == "StartError" && t.ExitCode == 128 &&
		strings.Contains(t.Message, "injected failure") && t.StartedAt.Unix() == 0 && !t.FinishedAt.IsZero() &&
		strings.HasPrefix(t.ContainerID, "containerd://")
}

// A start the runtime refuses once the container exists is a run, as with
// kubelet on containerd's CRI: it ends at once (StartError, exit code 128,
// the runtime's error), counts as a restart, and its restart policy and
// kubelet's crash back-off decide what follows: the first restart at once,
// then CrashLoopBackOff for 10 s, 20 s, ... Nothing of it is left in the
// runtime.
func TestWorkerStartRefused(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			e, refuse := newRefusingEnv(t)
			p := testPod("web", policy, nil, "a", "b")
			w := e.worker(p)
			refuse["a"] = errTest
			wake := e.step(w)
			// Two runs: the first, and its restart at once.
			cs := e.status(p, "a")
			if cs.RestartCount != 1 || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" ||
				!strings.Contains(cs.State.Waiting.Message, "back-off 10s") {
				t.Fatalf("status %+v, restarts %d; want CrashLoopBackOff after 1 restart", cs.State, cs.RestartCount)
			}
			if !isStartError(cs.LastTerminationState.Terminated) {
				t.Errorf("lastState %+v, want StartError 128", cs.LastTerminationState.Terminated)
			}
			if n := e.st.countEvents("Failed", "Error: create task: injected failure"); n != 2 {
				t.Errorf("%d Failed events, want 2: %v", n, e.st.events)
			}
			if n := e.st.countEvents("Started", "container a"); n != 0 {
				t.Errorf("a refused start told as Started: %v", e.st.events)
			}
			if e.status(p, "b").State.Running == nil {
				t.Errorf("b: %+v: the other container did not start", e.status(p, "b").State)
			}
			if n := len(e.rt.ctrs); n != 1 || w.rec.Apps["a"].ID != "" {
				t.Errorf("%d containers left (want b's only), a's record ID %q", n, w.rec.Apps["a"].ID)
			}
			if d := wake.Sub(e.clock.Now()); d != 10*time.Second {
				t.Errorf("wake in %v, want 10s", d)
			}
			// The back-off doubles with each refused run.
			e.clock.Step(10 * time.Second)
			wake = e.step(w)
			if cs := e.status(p, "a"); cs.RestartCount != 2 || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
				t.Fatalf("after the back-off: %+v, restarts %d", cs.State, cs.RestartCount)
			}
			if d := wake.Sub(e.clock.Now()); d != 20*time.Second {
				t.Errorf("wake in %v, want 20s", d)
			}
			// The exit is on disk: a restarted podvisor knows the count.
			recs, _ := loadRecords(e.s.layout)
			if cr := recs[p.UID].Apps["a"]; cr.RestartCount != 2 || !isStartError(cr.Terminated) {
				t.Errorf("saved record %+v", cr)
			}
			// Once it starts, it runs as the fourth run.
			delete(refuse, "a")
			e.clock.Step(20 * time.Second)
			e.step(w)
			if cs := e.status(p, "a"); cs.State.Running == nil || cs.RestartCount != 3 || !isStartError(cs.LastTerminationState.Terminated) {
				t.Fatalf("after a good start: %+v, restarts %d, last %+v", cs.State, cs.RestartCount, cs.LastTerminationState.Terminated)
			}
			if len(e.rt.ctrs) != 2 {
				t.Errorf("containers %v, want a's and b's", e.rt.ctrs)
			}
		})
	}
}

// With restartPolicy Never, a refused start ends the container
// (terminated StartError) and, once the others are done, the pod (Failed).
func TestWorkerStartRefusedNever(t *testing.T) {
	e, refuse := newRefusingEnv(t)
	p := testPod("web", v1.RestartPolicyNever, nil, "a")
	w := e.worker(p)
	refuse["a"] = errTest
	e.step(w)
	cs := e.status(p, "a")
	if !isStartError(cs.State.Terminated) || cs.RestartCount != 0 || cs.LastTerminationState.Terminated != nil {
		t.Fatalf("status %+v, restarts %d, last %+v; want terminated StartError", cs.State, cs.RestartCount, cs.LastTerminationState.Terminated)
	}
	if ph := e.phase(p); ph != v1.PodFailed {
		t.Errorf("phase %s, want Failed", ph)
	}
	if n := e.rt.count("Create"); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
	if len(e.rt.ctrs) != 0 || w.rec.Sandbox != nil {
		t.Errorf("left: containers %v, sandbox %+v", e.rt.ctrs, w.rec.Sandbox)
	}
}

// A refused start of an init container is a failed run of it: restarted
// with the crash back-off (the pod Init:CrashLoopBackOff), or, with
// restartPolicy Never, the pod's failure.
func TestWorkerInitStartRefused(t *testing.T) {
	for _, tc := range []struct {
		policy v1.RestartPolicy
		phase  v1.PodPhase
	}{
		{v1.RestartPolicyAlways, v1.PodPending},
		{v1.RestartPolicyNever, v1.PodFailed},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			e, refuse := newRefusingEnv(t)
			p := testPod("web", tc.policy, []string{"init"}, "a")
			w := e.worker(p)
			refuse["init"] = errTest
			e.step(w)
			cs := e.status(p, "init")
			if tc.policy == v1.RestartPolicyNever {
				if !isStartError(cs.State.Terminated) {
					t.Fatalf("init: %+v, want terminated StartError", cs.State)
				}
			} else if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount != 1 || !isStartError(cs.LastTerminationState.Terminated) {
				t.Fatalf("init: %+v, restarts %d, last %+v; want CrashLoopBackOff after a refused start", cs.State, cs.RestartCount, cs.LastTerminationState.Terminated)
			}
			if ph := e.phase(p); ph != tc.phase {
				t.Errorf("phase %s, want %s", ph, tc.phase)
			}
			if app := e.status(p, "a"); app.State.Waiting == nil || app.State.Waiting.Reason != "PodInitializing" {
				t.Errorf("app: %+v, want PodInitializing", app.State)
			}
			if len(e.rt.ctrs) != 0 {
				t.Errorf("containers left: %v", e.rt.ctrs)
			}
		})
	}
}

// Failures that are not the container's keep their old shape: containerd
// gone mid-start is no run (nothing counted, no back-off).
func TestWorkerStartRuntimeGone(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.rt.setFail("Start", fmt.Errorf("%w: %w", ErrRuntimeUnavailable, errTest))
	e.step(w)
	if cr := w.rec.Apps["a"]; cr.RestartCount != 0 || cr.Terminated != nil {
		t.Fatalf("record %+v: an unavailable runtime counted as a run", cr)
	}
	e.rt.setFail("Start", nil)
	e.clock.Step(errorRetry)
	e.step(w)
	if cs := e.status(p, "a"); cs.State.Running == nil || cs.RestartCount != 0 {
		t.Errorf("status %+v, restarts %d", cs.State, cs.RestartCount)
	}
}
