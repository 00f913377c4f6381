package podfile

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// checkRestartRules refuses the restart rule action podvisor does not
// carry out: RestartAllContainers (kubelet's in-place restart of the whole
// pod). Kubernetes' validation checks the rest (a restartPolicy with the
// rules, the operators, no rules on sidecars).
func (c *supportChecker) checkRestartRules(path string, ctr *v1.Container) {
	for i, r := range ctr.RestartPolicyRules {
		if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
			c.p.invalid(fmt.Sprintf("%s.restartPolicyRules[%d].action", path, i), notSupported(`"RestartAllContainers"; Restart only`))
		}
	}
}
