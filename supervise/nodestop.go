package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Stops the node decides: an eviction under pressure or the node's
// shutdown. The manifests still want such a pod; it is stopped as a
// removed pod is (preStop hooks, grace period, sandbox and network
// released) but its record stays, saying why, and it starts again:
//
//	running ──StopPod──▶ stopping ──containers stopped, sandbox released──▶ stopped (Failed)
//	                     (Terminating)                                        │
//	   ▲   evicted: its signal no longer under pressure and its back-off over │
//	   └── shutdown: ResumeShutdownStops, or the next podvisor start ─────────┘
//
// An evicted pod starts again as a new instance (new sandbox, restart
// counts from 0); a pod stopped for a shutdown goes on as it was, its stop
// counted as no restart.

// NodeStop is a stop the node decides, not the manifests: an eviction or
// the node's shutdown.
type NodeStop struct {
	// Reason is the pod's status reason: ReasonEvicted or
	// ReasonNodeShutdown.
	Reason string
	// Message is the status message and the event's text, in kubelet's
	// wording (ShutdownMessage for a shutdown).
	Message string
	// Grace bounds the stop: below 0 the pod's own
	// terminationGracePeriodSeconds; 0 kills at once, with no preStop
	// hook; above 0 the lesser of the pod's and Grace, preStop hooks run
	// within it.
	Grace time.Duration
	// Signal is the eviction signal ("memory.available",
	// "nodefs.available", ...); "" for a shutdown.
	Signal string
}

// The reasons of a NodeStop, as kubelet reports them.
const (
	ReasonEvicted      = "Evicted"
	ReasonNodeShutdown = "Terminated"
)

// ShutdownMessage is kubelet's status message for a pod stopped for the
// node's shutdown.
const ShutdownMessage = "Pod was terminated in response to imminent node shutdown."

// ErrNoPod means podvisor has no pod of that UID (the same error as
// ErrPodNotFound).
var ErrNoPod = ErrPodNotFound

// Eviction back-off: kubelet's crash back-off shape.
const (
	evictionBackoffInitial = 10 * time.Second
	evictionBackoffMax     = 5 * time.Minute
	evictionBackoffReset   = 10 * time.Minute
)

// nodeStopRecord is a node stop as the pod's record keeps it, so a
// restarted podvisor neither forgets an eviction nor takes a shutdown's
// stop for a crash.
type nodeStopRecord struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	Signal  string `json:"signal,omitempty"`
	// Grace is the grace period asked for (see NodeStop.Grace).
	Grace time.Duration `json:"grace"`
	// At is when the stop began; Stopped when every container had stopped
	// and the sandbox was released (zero until then).
	At      time.Time `json:"at"`
	Stopped time.Time `json:"stopped,omitempty"`
}

// nodeStopMsg asks the worker to stop the pod for st; done is closed once
// its containers are stopped.
type nodeStopMsg struct {
	stop NodeStop
	done chan struct{}
}

// resumeShutdownMsg asks the worker to start again a pod stopped for a
// shutdown that was cancelled.
type resumeShutdownMsg struct{}

func (nodeStopMsg) isMessage()       {}
func (resumeShutdownMsg) isMessage() {}

// pressure is the eviction signals under pressure, as SetPressure last
// said; nil until it is first called.
type pressure struct{ signals map[string]bool }

// StopPod stops pod uid for st and returns once its containers are
// stopped (its sandbox is released after), or ctx's error. ErrNoPod when
// podvisor has no such pod. A pod already stopped by the node returns at
// once; a second stop while one runs may shorten its grace period, its
// reason stays the first one's. A pod whose manifest is removed
// meanwhile is removed as usual.
func (s *Supervisor) StopPod(ctx context.Context, uid types.UID, st NodeStop) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	w := s.workers[uid]
	s.mu.Unlock()
	if w == nil {
		return fmt.Errorf("pod %s: %w", uid, ErrNoPod)
	}
	done := make(chan struct{})
	w.inbox.send(nodeStopMsg{stop: st, done: done})
	select {
	case <-done:
		return nil
	case <-w.done:
		return nil // removed: nothing of it runs
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetPressure says which eviction signals are under pressure now. A pod
// evicted for a signal not listed starts again, as a new instance, after
// its eviction back-off (10 s doubling to 5 min, reset once an instance
// has run 10 min). Until the first call after podvisor's start, no evicted
// pod starts again.
func (s *Supervisor) SetPressure(signals []string) {
	m := make(map[string]bool, len(signals))
	for _, sig := range signals {
		m[sig] = true
	}
	old := s.pressure.Swap(&pressure{signals: m})
	if old != nil && mapsEqual(old.signals, m) {
		return
	}
	s.wakeAll()
}

// ResumeShutdownStops starts again the pods StopPod stopped for a
// shutdown (the shutdown was cancelled: logind's
// PrepareForShutdown(false)). A stop still in progress finishes first.
func (s *Supervisor) ResumeShutdownStops() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		w.inbox.send(resumeShutdownMsg{})
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// evictionBackoff is how long an evicted pod waits, once its signal is no
// longer under pressure, after its n-th eviction in a row.
func evictionBackoff(n int) time.Duration {
	d := evictionBackoffInitial
	for i := 1; i < n && d < evictionBackoffMax; i++ {
		d *= 2
	}
	return min(d, evictionBackoffMax)
}

// nodeStopGrace is a node stop's grace period for pod and whether preStop
// hooks run within it.
func nodeStopGrace(pod *v1.Pod, asked time.Duration) (time.Duration, bool) {
	switch {
	case asked < 0:
		return gracePeriod(pod), podGraceAsked(pod)
	case asked == 0:
		return 0, false
	}
	own := 30 * time.Second
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		own = time.Duration(*s) * time.Second
	}
	g := min(own, asked)
	return g, g > 0
}

// planNodeStop stops the pod for the node, as planStop does (app
// containers, then sidecars last first) with the stop's grace period
// counted from its start, then releases the sandbox and marks the pod
// stopped; a stopped pod starts again once allowed.
func planNodeStop(p *plan, in planInput) {
	ns := in.Rec.NodeStop
	if ns.Stopped.IsZero() {
		grace, preStop := nodeStopGrace(in.Pod, ns.Grace)
		if grace > 0 {
			grace = max(grace-in.Now.Sub(ns.At), min(grace, 2*time.Second))
		}
		regular := func(ref ctrRef) bool {
			return ref.Type == containerTypeApp || !isSidecar(containerSpec(in.Pod, ref))
		}
		if ts := killTargets(in, regular); len(ts) > 0 {
			p.add(killContainers{Targets: ts, Grace: grace, Reason: "Killing", PreStop: preStop})
			return
		}
		if ts := lastSidecar(in); len(ts) > 0 {
			p.add(killContainers{Targets: ts, Grace: grace, Reason: "Killing", PreStop: preStop})
			return
		}
		if !allStopped(in.Rec) {
			// A container the runtime cannot tell about: look again.
			p.wakeAt(in.Now.Add(errorRetry))
			return
		}
		if in.Rec.Sandbox != nil {
			p.add(releaseSandbox{})
		}
		p.add(markNodeStopped{})
		return
	}
	switch ns.Reason {
	case ReasonEvicted:
		if in.Pressure == nil || in.Pressure.signals[ns.Signal] {
			return // SetPressure's next call wakes the worker
		}
		if until := ns.Stopped.Add(evictionBackoff(in.Rec.Evictions)); in.Now.Before(until) {
			p.wakeAt(until)
			return
		}
		p.add(resumePod{})
	case ReasonDeadlineExceeded:
		// Terminal, as under kubelet: only a new manifest runs again.
	default:
		if in.ResumeShutdown {
			p.add(resumePod{})
		}
	}
}

// allStopped reports whether no container of the record has a run left.
func allStopped(rec *podRecord) bool {
	for _, m := range []map[string]*containerRecord{rec.Init, rec.Apps} {
		for _, cr := range m {
			if cr.ID != "" {
				return false
			}
		}
	}
	return true
}

// markNodeStopped records that a node stop has stopped every container
// and released the sandbox.
type markNodeStopped struct{}

// resumePod starts again a pod the node stopped.
type resumePod struct{}

func (markNodeStopped) String() string { return "mark stopped by the node" }
func (resumePod) String() string       { return "start again after the node's stop" }

// beginNodeStop applies the node stops received: the first begins the
// stop (Warning Evicted event for an eviction, probes told the pod is
// terminating); a later one may shorten the grace period of a stop in
// progress.
func (w *podWorker) beginNodeStop(pod *v1.Pod, now time.Time) {
	asks := w.nodeStops
	w.nodeStops = nil
	if w.stopping {
		return // removed: the removal's stop goes on
	}
	for _, st := range asks {
		ns := w.rec.NodeStop
		if ns != nil {
			if ns.Stopped.IsZero() && st.Grace >= 0 && (ns.Grace < 0 || st.Grace < ns.Grace) {
				ns.Grace = st.Grace
			}
			continue
		}
		w.resumeShutdown = false
		w.stopStep = nil
		w.rec.NodeStop = &nodeStopRecord{Reason: st.Reason, Message: st.Message, Signal: st.Signal, Grace: st.Grace, At: now.Round(0)}
		if st.Reason == ReasonEvicted {
			if w.rec.StartTime != nil && now.Sub(*w.rec.StartTime) >= evictionBackoffReset {
				w.rec.Evictions = 1
			} else {
				w.rec.Evictions++
			}
			w.event(pod, "", v1.EventTypeWarning, ReasonEvicted, "%s", st.Message)
		}
		w.log.Info("stopping pod for the node", "reason", st.Reason, "message", st.Message, "signal", st.Signal, "grace", st.Grace)
		clear(w.restarts)
		w.d.prober.Terminating(string(w.uid))
		w.save()
	}
}

// nodeStopping reports whether a node stop is stopping the pod now.
func (w *podWorker) nodeStopping() bool {
	return w.rec != nil && w.rec.NodeStop != nil && w.rec.NodeStop.Stopped.IsZero()
}

// notifyStopped tells the StopPod calls waiting that the pod's containers
// are stopped, once they are.
func (w *podWorker) notifyStopped() {
	if len(w.stopWaiters) == 0 || w.rec == nil || !allStopped(w.rec) {
		return
	}
	if w.rec.NodeStop == nil && !w.stopping {
		return
	}
	for _, c := range w.stopWaiters {
		close(c)
	}
	w.stopWaiters = nil
}

// markNodeStopped records the node stop as done.
func (w *podWorker) markNodeStopped() {
	w.rec.NodeStop.Stopped = w.d.clock.Now().Round(0)
	w.save()
	w.log.Info("pod stopped for the node", "reason", w.rec.NodeStop.Reason)
}

// resume starts the pod again after the node's stop. An evicted pod
// starts as a new instance: new sandbox, fresh containers, restart counts
// from 0 (its events stay). A pod stopped for a shutdown goes on with its
// counts: the stop is no restart and no crash, its init containers run
// again in the new sandbox.
func (w *podWorker) resume(pod *v1.Pod) {
	ns := w.rec.NodeStop
	now := w.d.clock.Now()
	if ns.Reason == ReasonEvicted {
		w.rec.Init, w.rec.Apps = nil, nil
		w.rec.ensureContainers(pod)
		t := now.Round(0)
		w.rec.Created, w.rec.StartTime = t, &t
		w.event(pod, "", v1.EventTypeNormal, "StartedAgain",
			"Started again as a new instance: %s is no longer under pressure (evicted %s)", ns.Signal, ns.At.Format(time.RFC3339))
	} else {
		w.rec.each(pod, func(_ ctrRef, _ *v1.Container, cr *containerRecord) {
			cr.Terminated, cr.Done, cr.Rerun = nil, false, false
		})
		w.event(pod, "", v1.EventTypeNormal, "StartedAgain",
			"Started again after the node's shutdown stop (%s); the stop is not counted as a restart", ns.At.Format(time.RFC3339))
	}
	w.rec.NodeStop = nil
	w.resumeShutdown = false
	clear(w.crash)
	clear(w.retry)
	clear(w.exitSeen)
	clear(w.waiting)
	clear(w.restarts)
	w.conds = nil
	w.sandboxRetry = retryClock{}
	// Probes start anew for the new runs.
	w.d.prober.RemovePod(string(w.uid))
	w.save()
	w.log.Info("pod started again after the node's stop", "reason", ns.Reason)
}

// nodeStopConditions adds kubelet's DisruptionTarget condition of a pod
// the node stops.
func nodeStopConditions(conds []v1.PodCondition, ns *nodeStopRecord) []v1.PodCondition {
	conds = slices.DeleteFunc(conds, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
	if ns == nil || ns.Reason == ReasonDeadlineExceeded {
		// kubelet marks a pod past its deadline Failed, not disrupted.
		return conds
	}
	return append(conds, v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonTerminationByKubelet,
		Message:            ns.Message,
		LastTransitionTime: metav1.NewTime(ns.At),
	})
}

// halting reports whether the pod is being stopped or stays stopped: its
// manifest was removed, or the node stopped it.
func (w *podWorker) halting() bool {
	return w.stopping || (w.rec != nil && w.rec.NodeStop != nil)
}

// setStopStep says, while the pod stops, what the stop waits on now, and
// publishes it at once: a step that hangs (a CNI DEL, a preStop hook) is
// seen while it hangs.
func (w *podWorker) setStopStep(pod *v1.Pod, step string) {
	if !w.stopping && !w.nodeStopping() {
		return
	}
	if w.stopStep != nil && w.stopStep.Step == step {
		return
	}
	w.stopStep = &status.StopStep{Step: step, Since: w.d.clock.Now().Round(0)}
	w.publish(pod)
}

// tellStopSteps shows, until wg is done, what each container's stop waits
// on as notes ({container, step}) say.
func (w *podWorker) tellStopSteps(pod *v1.Pod, wg *sync.WaitGroup, notes chan [2]string) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	steps := map[string]string{}
	for {
		select {
		case n := <-notes:
			steps[n[0]] = n[1]
			w.setStopStep(pod, joinSteps(steps))
		case <-done:
			return
		}
	}
}

func joinSteps(steps map[string]string) string {
	names := slices.Sorted(maps.Keys(steps))
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = steps[n]
	}
	return strings.Join(out, "; ")
}

// pluginLister is what a Network may tell of a DEL: the plugins it runs
// for a sandbox (cni.Manager does).
type pluginLister interface{ Plugins(id string) []string }

// cniDelStep names the CNI DEL of sandbox id as a stop's step.
func cniDelStep(n Network, id string) string {
	if b, ok := n.(boundedNetwork); ok {
		n = b.net
	}
	if pl, ok := n.(pluginLister); ok {
		if ps := pl.Plugins(id); len(ps) > 0 {
			return "CNI DEL (plugin " + strings.Join(ps, ", ") + ")"
		}
	}
	return "CNI DEL"
}

// removalAsked is told by the inbox, in the sender's goroutine, that the
// pod's manifest is gone. A step may hang meanwhile (a CNI ADD whose
// plugin does not answer is interrupted, but the DEL that undoes it may
// hang too): the pod shows at once that it is being removed, and what it
// waits on, from its last published status; the worker's next publish
// takes over.
func (w *podWorker) removalAsked() {
	t := metav1.NewTime(w.d.clock.Now().Round(0))
	if !w.removeAsked.CompareAndSwap(nil, &t) {
		return
	}
	last := w.last.Load()
	if last == nil {
		return
	}
	out := last.DeepCopy()
	out.DeletionTimestamp = &t
	if out.DeletionGracePeriodSeconds == nil {
		secs := int64(gracePeriod(out) / time.Second)
		out.DeletionGracePeriodSeconds = &secs
	}
	if b := w.busy.Load(); b != nil {
		if j, err := json.Marshal(b); err == nil {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[status.StopStepAnnotation] = string(j)
		}
	}
	w.d.status.SetPod(out)
}
