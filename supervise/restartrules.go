package supervise

import (
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// anyAppRestartPolicy reports whether an app container has a restartPolicy
// of its own, so that the pod's alone does not decide.
func anyAppRestartPolicy(spec *v1.PodSpec) bool {
	for i := range spec.Containers {
		if spec.Containers[i].RestartPolicy != nil {
			return true
		}
	}
	return false
}

// statusRestarts says whether a container's ended run is followed by
// another, for its status (waiting, not terminated): policy is the pod's
// as containerStatus adjusts it; an app container's own restartPolicy and
// rules decide unless the pod is done.
func statusRestarts(policy v1.RestartPolicy, ref ctrRef, c *v1.Container, podDone bool, exitCode int32) bool {
	if ref.Type == containerTypeApp && !podDone {
		return status.ContainerShouldRestart(&v1.PodSpec{RestartPolicy: policy}, c, exitCode)
	}
	return status.PodPolicyRestarts(policy, exitCode)
}
