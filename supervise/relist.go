package supervise

import (
	"context"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The relist is the safety net for exits the event stream missed (kubelet's
// PLEG relist). With a runtime that is a TaskLister, each period costs one
// listing of the namespace's tasks and a stat of each resting pod's sandbox
// files; only the workers whose pods differ from what they last saw are
// woken:
//
//	relist tick ──▶ TaskStates (one request) ──▶ for each worker:
//	                    │ error                    no rest view ───────────────┐
//	                    ▼                          a container it saw running  │
//	                 wake all                      missing, not running or     ├─▶ wake
//	                                               under another pid ──────────┤
//	                                               its sandbox gone (a stat) ──┘
//	                                               else: nothing
//
// A runtime without the listing has every worker woken, each asking State
// for each of its containers.

// restView is what a worker's last step left when it left the pod at rest:
// every app container running, nothing failed, nothing due. The relist
// compares it with the runtime's listing; the worker publishes it at the
// end of a step and clears it at the start of the next.
type restView struct {
	running map[string]uint32 // container ID → pid, as observed
	sandbox *Sandbox          // the sandbox's files and boot; nil: none
}

// restView returns the pod's rest view after a step that settled (its last
// plan had no actions and nothing failed) with nothing due (wake zero), or
// nil when the relist must wake the worker as before: a container not
// running, not observed or that could not be observed, a stop under way.
func (w *podWorker) restView(pod *v1.Pod, settled bool, wake time.Time) *restView {
	if !settled || w.failed || !wake.IsZero() || w.stopping || len(w.nodeStops) > 0 ||
		w.nodeStopping() || w.d.down.Load() != nil || w.rec == nil || pod == nil {
		return nil
	}
	for i := range pod.Spec.Containers {
		cr := w.rec.Apps[pod.Spec.Containers[i].Name]
		if cr == nil || cr.ID == "" {
			return nil
		}
		if _, ok := w.obs[cr.ID]; !ok {
			return nil
		}
	}
	v := &restView{running: make(map[string]uint32, len(w.obs))}
	for id, o := range w.obs {
		if o.Err != nil || !o.State.HasTask || !o.State.Running || o.State.Pid == 0 {
			return nil
		}
		v.running[id] = o.State.Pid
	}
	if sb := w.rec.Sandbox; sb != nil {
		// Only what Sandboxes.Alive reads: the record is the worker's.
		v.sandbox = &Sandbox{ID: sb.ID, NetNS: sb.NetNS, IPCNS: sb.IPCNS, Shm: sb.Shm, UserNS: sb.UserNS, PIDNS: sb.PIDNS, BootID: sb.BootID}
	}
	return v
}

// atRest reports whether the listing shows the pod as its worker left it:
// each container it saw running still running with the same pid (a new pid
// is a new process: a missed exit and restart), and its sandbox alive.
func atRest(v *restView, tasks map[string]ContainerState, alive func(*Sandbox) bool) bool {
	if v == nil {
		return false
	}
	for id, pid := range v.running {
		st, ok := tasks[id]
		if !ok || !st.HasTask || !st.Running || st.Pid != pid {
			return false
		}
	}
	return v.sandbox == nil || alive(v.sandbox)
}

// relistLoop relists at each tick until ctx ends. It runs apart from the
// sync loop: a listing that hangs (until the request timeout) holds neither
// the snapshots nor the heartbeat; ticks meanwhile are dropped.
func (s *Supervisor) relistLoop(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		woken := s.relist(ctx)
		s.log.Debug("relist", "woken", len(woken))
	}
}

// relist wakes the workers whose pods may have changed and returns them:
// with a TaskLister, those the listing shows not at rest; without one, or
// when the listing fails, every worker.
func (s *Supervisor) relist(ctx context.Context) []types.UID {
	s.mu.Lock()
	workers := slices.Collect(maps.Values(s.workers))
	s.mu.Unlock()
	var tasks map[string]ContainerState
	l, ok := s.rt.(TaskLister)
	if ok {
		var err error
		if tasks, err = l.TaskStates(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Debug("relist: tasks not listed; waking every worker", "err", err)
			ok = false
		}
	}
	var woken []types.UID
	for _, w := range workers {
		if !ok || !atRest(w.rest.Load(), tasks, s.sandboxes.Alive) {
			w.inbox.send(wakeMsg{})
			woken = append(woken, w.uid)
		}
	}
	return woken
}
