package status

import v1 "k8s.io/api/core/v1"

// ContainerShouldRestart says whether regular container c of a pod with
// spec runs again after a run that ended with exitCode, as kubelet's
// ContainerShouldRestart (the ContainerRestartRules feature): the first of
// c's restartPolicyRules whose exitCodes match (In or NotIn) restarts it
// (action Restart); else c's own restartPolicy decides; else the pod's.
func ContainerShouldRestart(spec *v1.PodSpec, c *v1.Container, exitCode int32) bool {
	if p := c.RestartPolicy; p != nil {
		if r, ok := matchRestartRule(c, exitCode); ok && r.Action == v1.ContainerRestartRuleActionRestart {
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
	switch spec.RestartPolicy {
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
