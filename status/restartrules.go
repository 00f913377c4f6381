package status

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "k8s.io/api/core/v1"
)

// kubelet's words for an in-place restart of all the containers of a pod
// (the RestartAllContainers action of a restart policy rule).
const (
	// ReasonRestartingAllContainers is the reason of the waiting state
	// and the last state of each container removed for the restart.
	ReasonRestartingAllContainers = "RestartingAllContainers"
	// MessageRestartingAllContainers goes with it.
	MessageRestartingAllContainers = "The container is removed because RestartAllContainers in place"
	// ReasonRestartAllContainersStarted is the reason of the
	// AllContainersRestarting condition while it is True.
	ReasonRestartAllContainersStarted = "RestartAllContainersStarted"
)

// ContainerShouldRestart says whether regular container c of a pod with
// spec runs again after a run that ended with exitCode, as kubelet's
// ContainerShouldRestart (the ContainerRestartRules feature): the first of
// c's restartPolicyRules whose exitCodes match (In or NotIn) restarts it
// (action Restart, or RestartAllContainers, which restarts it with the rest
// of the pod); else c's own restartPolicy decides; else the pod's.
func ContainerShouldRestart(spec *v1.PodSpec, c *v1.Container, exitCode int32) bool {
	if p := c.RestartPolicy; p != nil {
		if r, ok := matchRestartRule(c, exitCode); ok && (r.Action == v1.ContainerRestartRuleActionRestart ||
			r.Action == v1.ContainerRestartRuleActionRestartAllContainers) {
			return true
		}
		switch *p {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	return PodPolicyRestarts(spec.RestartPolicy, exitCode)
}

// PodPolicyRestarts says whether the pod's restartPolicy runs a container
// again after a run that ended with exitCode.
func PodPolicyRestarts(policy v1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case v1.RestartPolicyAlways:
		return true
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return false
}

// matchRestartRule is kubelet's FindMatchingContainerRestartRule: the
// first rule whose exitCodes match exitCode.
func matchRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, r := range c.RestartPolicyRules {
		if r.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range r.ExitCodes.Values {
			in = in || v == exitCode
		}
		switch r.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return r, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return r, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// TriggersRestartAll reports whether container c's run that ended with
// exitCode restarts every container of the pod: its first matching rule
// has action RestartAllContainers (kubelet's ShouldAllContainersRestart).
func TriggersRestartAll(c *v1.Container, exitCode int32) bool {
	if c.RestartPolicy == nil {
		return false
	}
	r, ok := matchRestartRule(c, exitCode)
	return ok && r.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// AllContainersCouldRestart reports whether a container of spec (init or
// regular) has a RestartAllContainers rule: only such a pod has the
// AllContainersRestarting condition.
func AllContainersCouldRestart(spec *v1.PodSpec) bool {
	for _, cs := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for _, r := range cs[i].RestartPolicyRules {
				if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// restartingAll reports whether t is the last state kubelet gives a
// container removed for a restart of all containers: it does not count as
// a failure for the pod's phase.
func restartingAll(t *v1.ContainerStateTerminated) bool {
	return t != nil && t.Reason == ReasonRestartingAllContainers
}

// AllContainersRestartingCondition is kubelet's
// GenerateAllContainersRestartingCondition: True (reason
// RestartAllContainersStarted) while the containers of a pod are being
// stopped and removed for a restart of all of them, False otherwise
// (reason PodCompleted or PodFailed once the phase is terminal). ok is
// false for a pod without a RestartAllContainers rule, which has no such
// condition. LastTransitionTime is kept from prev while the status holds.
func AllContainersRestartingCondition(spec *v1.PodSpec, phase v1.PodPhase, restarting bool, prev []v1.PodCondition, now time.Time) (cond v1.PodCondition, ok bool) {
	if !AllContainersCouldRestart(spec) {
		return v1.PodCondition{}, false
	}
	cond = v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case phase == v1.PodSucceeded:
		cond.Reason = ReasonPodCompleted
	case phase == v1.PodFailed:
		cond.Reason = ReasonPodFailed
	case restarting:
		cond.Status = v1.ConditionTrue
		cond.Reason = ReasonRestartAllContainersStarted
		cond.Message = "container exited with restart policy rule"
	}
	cond.LastTransitionTime = metav1.NewTime(now)
	for _, p := range prev {
		if p.Type == cond.Type && p.Status == cond.Status {
			cond.LastTransitionTime = p.LastTransitionTime
		}
	}
	return cond, true
}
