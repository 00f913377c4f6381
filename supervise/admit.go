package supervise

import (
	v1 "k8s.io/api/core/v1"
)

// AdmitFunc is the node's own admission of a pod about to start for the
// first time, as kubelet's admit handlers (the sysctls allowlist, ...)
// decide it: "" admits; else the reason and message the pod is rejected
// with (Failed, reason, "Pod was rejected: "+message; a Warning event
// says message). It runs before the devices are allocated, as kubelet's
// handlers run before its resource and device admission.
type AdmitFunc func(pod *v1.Pod) (reason, message string)

// admitNode asks the node's admission about a pod that has not started
// yet, once per worker. A pod already started, by this podvisor or an
// earlier one, is not asked again: a running pod keeps running when the
// node's configuration changes; a new manifest (a new pod) or the next
// podvisor asks again, as a restarted kubelet admits its pods again.
func (w *podWorker) admitNode(pod *v1.Pod) {
	if w.nodeAdmitted || w.rejected != nil || w.stopping || w.d.admitPod == nil {
		return
	}
	w.nodeAdmitted = true
	if w.rec.everStarted() {
		return
	}
	if reason, msg := w.d.admitPod(pod); reason != "" {
		w.rejected = &rejection{Reason: reason, Message: msg}
		w.log.Warn("pod rejected", "reason", reason, "message", msg)
		w.event(pod, "", v1.EventTypeWarning, reason, "%s", msg)
	}
}

// everStarted reports whether the record holds a sandbox, a node's stop
// or a container run: the pod was started by this podvisor or an earlier
// one.
func (r *podRecord) everStarted() bool {
	if r.Sandbox != nil || r.NodeStop != nil {
		return true
	}
	for _, crs := range []map[string]*containerRecord{r.Init, r.Apps} {
		for _, cr := range crs {
			if cr.ID != "" || cr.Terminated != nil || cr.LastState != nil || cr.RestartCount > 0 {
				return true
			}
		}
	}
	return false
}
