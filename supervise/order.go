package supervise

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/podvisor/podvisor/manifest/podfile"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Ordering between pods: a pod whose annotation podvisor.io/wait-for names
// other pods starts nothing (no sandbox, no container) until each of them
// is Ready. The gate holds only while the pod has no sandbox: a pod that
// started is never stopped because a pod it waited for is no longer Ready
// (start-only, as the order of init containers). A new sandbox (after a
// reboot, a lost sandbox, a changed manifest) waits again.

// reasonWaitingFor prefixes the containers' waiting reason while the pod
// waits: "WaitingFor:db,cache", shown as the STATUS of `get`.
const reasonWaitingFor = "WaitingFor:"

// depWait is one pod a pod waits for that is not Ready.
type depWait struct {
	Name    string // as in its manifest (without "-<node>")
	Key     string // namespace/full name
	Defined bool   // a worker runs it: its manifest exists
}

// podReadiness is the readiness of every worker's pod as last published,
// for the pods that wait for others; any change wakes the waiting workers.
type podReadiness struct {
	mu      sync.Mutex
	byUID   map[types.UID]readyEntry
	waiters map[*podWorker][]depWait
}

type readyEntry struct {
	key   string
	ready bool
}

// set records the readiness of the pod uid (key "namespace/name").
func (r *podReadiness) set(uid types.UID, key string, ready bool) {
	r.mu.Lock()
	if old, ok := r.byUID[uid]; ok && old.ready == ready {
		r.mu.Unlock()
		return
	}
	if r.byUID == nil {
		r.byUID = map[types.UID]readyEntry{}
	}
	r.byUID[uid] = readyEntry{key: key, ready: ready}
	r.wakeLocked()
}

// remove forgets a pod whose worker ended.
func (r *podReadiness) remove(uid types.UID) {
	r.mu.Lock()
	if _, ok := r.byUID[uid]; !ok {
		r.mu.Unlock()
		return
	}
	delete(r.byUID, uid)
	r.wakeLocked()
}

// wakeLocked wakes every waiter and unlocks.
func (r *podReadiness) wakeLocked() {
	waiters := r.waiters
	r.waiters = nil
	r.mu.Unlock()
	for w := range waiters {
		w.inbox.send(wakeMsg{})
	}
}

func (r *podReadiness) lookupLocked(key string) (defined, ready bool) {
	for _, e := range r.byUID {
		if e.key == key {
			defined = true
			ready = ready || e.ready
		}
	}
	return defined, ready
}

// notReady returns the pods of keys (with their manifest names) that are
// not Ready.
func (r *podReadiness) notReady(names, keys []string) []depWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []depWait
	for i, k := range keys {
		if defined, ready := r.lookupLocked(k); !ready {
			out = append(out, depWait{Name: names[i], Key: k, Defined: defined})
		}
	}
	return out
}

// wait makes w woken at the next change. What changed since waits were
// looked up wakes it at once.
func (r *podReadiness) wait(w *podWorker, waits []depWait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiters == nil {
		r.waiters = map[*podWorker][]depWait{}
	}
	r.waiters[w] = waits
	for _, d := range waits {
		if defined, ready := r.lookupLocked(d.Key); ready || defined != d.Defined {
			w.inbox.send(wakeMsg{})
			return
		}
	}
}

// depsWaits is what the planner is told of the pods pod waits for: those
// not Ready, while the pod has no sandbox (the gate is start-only).
func (w *podWorker) depsWaits(pod *v1.Pod) []depWait {
	if w.rec.Sandbox != nil || pod.Annotations[podfile.AnnotationWaitFor] == "" {
		return nil
	}
	return w.d.readiness.notReady(podfile.WaitFor(pod), podfile.WaitForKeys(pod))
}

// planDepsWait holds a pod without a sandbox while pods it waits for are
// not Ready. No wake-up: a change of their readiness wakes the worker.
func planDepsWait(p *plan, in planInput) bool {
	if in.Rec.Sandbox != nil || len(in.WaitFor) == 0 {
		return false
	}
	p.WaitFor = in.WaitFor
	return true
}

// applyDepsWait shows the wait (the containers' waiting reason, the
// ConditionDependenciesReady condition, an event when what it waits for
// changes), or its end.
func (w *podWorker) applyDepsWait(pod *v1.Pod, waits []depWait) {
	if len(waits) == 0 {
		if w.depsCond == nil {
			return
		}
		for name, wt := range w.waiting {
			if strings.HasPrefix(wt.Reason, reasonWaitingFor) {
				delete(w.waiting, name)
			}
		}
		if !w.halting() { // else it stops: nothing starts
			w.log.Info("the pods it waits for are Ready; starting", "waited", w.d.clock.Since(w.depsCond.LastTransitionTime.Time).Round(time.Second).String())
		}
		w.depsCond = nil
		return
	}
	w.d.readiness.wait(w, waits)
	names := make([]string, 0, len(waits))
	parts := make([]string, 0, len(waits))
	for _, d := range waits {
		names = append(names, d.Name)
		if d.Defined {
			parts = append(parts, d.Name+" (not Ready)")
		} else {
			parts = append(parts, d.Name+" (no manifest defines it)")
		}
	}
	msg := "containers wait for pods to be Ready (" + podfile.AnnotationWaitFor + "): " + strings.Join(parts, ", ")
	wt := &v1.ContainerStateWaiting{Reason: reasonWaitingFor + strings.Join(names, ","), Message: msg}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		w.waiting[c.Name] = wt
	}
	if w.depsCond != nil && w.depsCond.Message == msg {
		return
	}
	since := metav1.NewTime(w.d.clock.Now())
	if w.depsCond != nil {
		since = w.depsCond.LastTransitionTime
	}
	w.depsCond = &v1.PodCondition{Type: status.ConditionDependenciesReady, Status: v1.ConditionFalse, Reason: status.ReasonWaitingForPods, Message: msg, LastTransitionTime: since}
	w.event(pod, "", v1.EventTypeNormal, status.ReasonWaitingForPods, "%s", msg)
	w.log.Info("waiting for pods", "pods", fmt.Sprint(names))
}

// withDepsCondition puts the pod's ConditionDependenciesReady (nil: none)
// in place of the one conds may carry from before.
func withDepsCondition(conds []v1.PodCondition, c *v1.PodCondition) []v1.PodCondition {
	conds = slices.DeleteFunc(conds, func(x v1.PodCondition) bool { return x.Type == status.ConditionDependenciesReady })
	if c != nil {
		conds = append(conds, *c)
	}
	return conds
}
