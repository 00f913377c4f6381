package status

import (
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
)

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

// StopStepAnnotation holds, while a pod stops, the step its stop waits on
// and since when, as JSON StopStep: the API has no field for it, and
// `describe pod` shows it beside Terminating.
const StopStepAnnotation = "podvisor.io/stop-step"

// StopStep is what a stopping pod waits on ("preStop hook of container
// web", "container web to exit (grace 30s)", "CNI DEL (plugin bridge)").
type StopStep struct {
	Step  string    `json:"step"`
	Since time.Time `json:"since"`
}

// PodStopStep reads a pod's StopStepAnnotation; nil when it has none or
// it cannot be read.
func PodStopStep(pod *v1.Pod) *StopStep {
	s := pod.Annotations[StopStepAnnotation]
	if s == "" {
		return nil
	}
	var st StopStep
	if json.Unmarshal([]byte(s), &st) != nil || st.Step == "" {
		return nil
	}
	return &st
}
