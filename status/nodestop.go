package status

import v1 "k8s.io/api/core/v1"

// StoppedByNode reports whether the node stopped pod for itself (an
// eviction, the node's shutdown): kubelet's DisruptionTarget condition
// with reason TerminationByKubelet. Such a pod stays, Failed, and may
// start again; its deletionTimestamp, while it stops, is no removal.
func StoppedByNode(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet
		}
	}
	return false
}

// Removing reports whether pod is being removed: it is stopping and will
// be gone once stopped (its manifest was removed or replaced), as a pod
// with a deletionTimestamp in the apiserver.
func Removing(pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil && !StoppedByNode(pod)
}
