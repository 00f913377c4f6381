package supervise

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// relistEnv runs a listing supervisor with pods a (containers a1, a2) and
// b (container b1), whose workers are at rest, and a relist period beyond
// the test: the test relists itself.
func relistEnv(t *testing.T) (e *env, a, b *v1.Pod, stop func()) {
	t.Helper()
	e = newListingEnv(t)
	e.s.opts.RelistPeriod = time.Hour
	a = testPod("a", v1.RestartPolicyAlways, nil, "a1", "a2")
	b = testPod("b", v1.RestartPolicyAlways, nil, "b1")
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- snapshot(a, b)
	stop = e.run(snaps)
	poll(t, "pods started", func() bool { return e.runningCount() == 3 })
	// Just started, the workers have seen no pid: the first relist wakes
	// them, and they are at rest once they have looked.
	e.s.relist(context.Background())
	poll(t, "workers at rest", func() bool { return e.atRest() == 2 })
	if woken := e.s.relist(context.Background()); len(woken) > 0 {
		stop()
		t.Fatalf("a relist at rest woke %v", woken)
	}
	return e, a, b, stop
}

// TestRelistWakesOnlyChanged: an exit the event stream missed (the task
// gone, exited, or another process in its place) or a lost sandbox is
// found by the relist's listing, which wakes exactly the worker of that
// pod, and the pod recovers as it did when every worker was woken.
func TestRelistWakesOnlyChanged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(e *env, id string)
		restart bool // the container is started again
	}{
		{"exited", func(e *env, id string) { e.rt.exit(id, 137) }, true},
		{"task gone", func(e *env, id string) { e.rt.setState(id, ContainerState{Exists: true}) }, true},
		{"container gone", func(e *env, id string) {
			e.rt.mu.Lock()
			delete(e.rt.ctrs, id)
			e.rt.mu.Unlock()
		}, true},
		{"another pid", func(e *env, id string) {
			e.rt.mu.Lock()
			e.rt.ctrs[id].state.Pid += 1000
			e.rt.mu.Unlock()
		}, false},
		{"sandbox gone", func(e *env, id string) {
			e.rt.mu.Lock()
			sb := e.rt.ctrs[id].cfg.SandboxID
			e.rt.mu.Unlock()
			e.sbx.mu.Lock()
			delete(e.sbx.live, sb)
			e.sbx.mu.Unlock()
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, a, b, stop := relistEnv(t)
			defer stop()
			ctx := context.Background()
			id, other := e.rt.running()["a1"], e.rt.running()["b1"]
			states, otherStates := e.rt.count("State "+id), e.rt.count("State "+other)
			tc.change(e, id)
			if woken := e.s.relist(ctx); !slices.Equal(woken, []types.UID{a.UID}) {
				t.Fatalf("relist woke %v, want only %s", woken, a.UID)
			}
			if tc.restart {
				poll(t, "a1 started again", func() bool { n := e.rt.running()["a1"]; return n != "" && n != id })
			} else {
				poll(t, "a's worker looked", func() bool { return e.rt.count("State "+id) > states })
				if n := e.rt.running()["a1"]; n != id {
					t.Errorf("a1 is %q, want %q still: a container running under another pid is no exit", n, id)
				}
			}
			if tc.restart {
				// A container just started has no pid seen yet: the
				// next relist wakes its worker once more.
				poll(t, "a's step over", func() bool { return e.atRest() == 1 })
				if woken := e.s.relist(ctx); !slices.Equal(woken, []types.UID{a.UID}) {
					t.Fatalf("the relist after the restart woke %v, want only %s", woken, a.UID)
				}
			}
			poll(t, "workers at rest again", func() bool { return e.atRest() == 2 })
			if woken := e.s.relist(ctx); len(woken) > 0 {
				t.Errorf("the relist after the recovery woke %v", woken)
			}
			if n := e.rt.count("State "+other) - otherStates; n > 0 {
				t.Errorf("pod %s, unchanged, was looked at %d times", b.Name, n)
			}
		})
	}
}

// TestRelistListingFails: a relist whose listing fails wakes every worker,
// each asking State for its containers, as without the listing.
func TestRelistListingFails(t *testing.T) {
	e, a, b, stop := relistEnv(t)
	defer stop()
	ids := e.rt.running()
	states := map[string]int{}
	for _, id := range ids {
		states[id] = e.rt.count("State " + id)
	}
	e.rt.setFail("TaskStates", errTest)
	woken := e.s.relist(context.Background())
	slices.Sort(woken)
	if want := []types.UID{a.UID, b.UID}; !slices.Equal(woken, want) {
		t.Fatalf("relist woke %v, want %v", woken, want)
	}
	for name, id := range ids {
		poll(t, name+" looked at", func() bool { return e.rt.count("State "+id) > states[id] })
	}
}

// TestAtRest: the relist leaves a worker asleep only when the listing
// shows each container it saw running still running under the same pid,
// and its sandbox alive.
func TestAtRest(t *testing.T) {
	running := func(pid uint32) ContainerState {
		return ContainerState{Exists: true, HasTask: true, Running: true, Pid: pid}
	}
	sb := &Sandbox{ID: "sb1"}
	alive := func(s *Sandbox) bool { return s.ID == "sb1" }
	view := &restView{running: map[string]uint32{"c1": 10, "c2": 20}, sandbox: sb}
	for _, tc := range []struct {
		name  string
		view  *restView
		tasks map[string]ContainerState
		want  bool
	}{
		{"same", view, map[string]ContainerState{"c1": running(10), "c2": running(20), "other": running(30)}, true},
		{"no rest view", nil, map[string]ContainerState{"c1": running(10)}, false},
		{"a task missing", view, map[string]ContainerState{"c1": running(10)}, false},
		{"exited", view, map[string]ContainerState{"c1": running(10), "c2": {Exists: true, HasTask: true, Pid: 20, ExitCode: 1, ExitedAt: time.Unix(1, 0)}}, false},
		{"created", view, map[string]ContainerState{"c1": running(10), "c2": {Exists: true, HasTask: true}}, false},
		{"another pid", view, map[string]ContainerState{"c1": running(10), "c2": running(21)}, false},
		{"sandbox gone", &restView{running: view.running, sandbox: &Sandbox{ID: "sb2"}}, map[string]ContainerState{"c1": running(10), "c2": running(20)}, false},
		{"no sandbox", &restView{running: view.running}, map[string]ContainerState{"c1": running(10), "c2": running(20)}, true},
	} {
		if got := atRest(tc.view, tc.tasks, alive); got != tc.want {
			t.Errorf("%s: atRest = %v, want %v", tc.name, got, tc.want)
		}
	}
}
