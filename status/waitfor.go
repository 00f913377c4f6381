package status

import v1 "k8s.io/api/core/v1"

// ConditionDependenciesReady is the pod condition of a pod whose
// containers wait for other pods to be Ready (annotation
// podvisor.io/wait-for): False, with reason ReasonWaitingForPods, a message
// naming the pods and the time the wait began, until they are all Ready;
// then it is gone.
const ConditionDependenciesReady v1.PodConditionType = "podvisor.io/DependenciesReady"

// ReasonWaitingForPods is the reason of ConditionDependenciesReady while
// the pod waits; the containers' waiting reason is "WaitingFor:" and the
// names.
const ReasonWaitingForPods = "WaitingForPods"

// PodWaitingFor returns the pod's ConditionDependenciesReady while it
// waits, else nil.
func PodWaitingFor(pod *v1.Pod) *v1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == ConditionDependenciesReady && c.Status == v1.ConditionFalse {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
