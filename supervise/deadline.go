package supervise

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// A pod's activeDeadlineSeconds, as kubelet's activeDeadlineHandler
// enforces it: counted from the pod's status.startTime (kept in the pod's
// record, so a restarted podvisor counts from the same instant), and once
// reached the pod is stopped as the node stops it (preStop hooks within
// its own grace period, then its sandbox released) and ends Failed with
// reason DeadlineExceeded. Unlike an eviction it never starts again: only
// a changed manifest (a new pod) runs again. A pod already finished
// (Succeeded or Failed) is left as it is.

// ReasonDeadlineExceeded is the status reason and the event reason of a
// pod stopped for its activeDeadlineSeconds, as kubelet's.
const ReasonDeadlineExceeded = "DeadlineExceeded"

// DeadlineMessage is kubelet's status message and event text for a pod
// past its activeDeadlineSeconds.
const DeadlineMessage = "Pod was active on the node longer than the specified deadline"

// exceedDeadline stops a pod past its activeDeadlineSeconds.
type exceedDeadline struct{}

func (exceedDeadline) String() string { return "stop: active deadline exceeded" }

// activeDeadline is when pod's activeDeadlineSeconds ends, counted from
// start; ok is false when the pod has none or has not started.
func activeDeadline(pod *v1.Pod, start *time.Time) (time.Time, bool) {
	s := pod.Spec.ActiveDeadlineSeconds
	if s == nil || start == nil || start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*s) * time.Second), true
}

// planDeadline stops a running pod whose active deadline has passed
// (kubelet: duration since startTime >= the deadline), or wakes the worker
// when it will. It reports whether it added the stop.
func planDeadline(p *plan, in planInput) bool {
	end, ok := activeDeadline(in.Pod, in.Rec.StartTime)
	if !ok || finishedPod(in.Pod, in.Rec) {
		return false
	}
	if in.Now.Before(end) {
		p.wakeAt(end)
		return false
	}
	p.add(exceedDeadline{})
	return true
}

// beginDeadlineStop records the pod's stop for its deadline, with kubelet's
// Normal DeadlineExceeded event; the node-stop planner carries it out with
// the pod's own grace period.
func (w *podWorker) beginDeadlineStop(pod *v1.Pod) {
	now := w.d.clock.Now()
	w.resumeShutdown = false
	w.stopStep = nil
	w.rec.NodeStop = &nodeStopRecord{Reason: ReasonDeadlineExceeded, Message: DeadlineMessage, Grace: -1, At: now.Round(0)}
	w.event(pod, "", v1.EventTypeNormal, ReasonDeadlineExceeded, "%s", DeadlineMessage)
	w.log.Info("stopping pod: active deadline exceeded", "activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds, "startTime", w.rec.StartTime)
	clear(w.restarts)
	w.d.prober.Terminating(string(w.uid))
	w.save()
}
