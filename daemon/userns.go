package daemon

import (
	"fmt"

	"github.com/podvisor/podvisor/supervise"
	v1 "k8s.io/api/core/v1"
)

// userNSWarnings: a pod with hostUsers: false waits when the subordinate
// IDs podvisor hands out to user namespaces are misconfigured.
func userNSWarnings(_ *Config, pod *v1.Pod) []string {
	if hu := pod.Spec.HostUsers; hu == nil || *hu {
		return nil
	}
	if err := supervise.CheckUserNSIDs(); err != nil {
		return []string{fmt.Sprintf("spec.hostUsers: no user namespace can be made on this node (%v): the pod would wait in ContainerCreating with FailedCreatePodSandBox events", err)}
	}
	return nil
}
