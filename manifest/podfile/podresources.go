package podfile

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// checkPodResources refuses the pod-level resources podvisor does not
// apply: Kubernetes' validation takes cpu, memory and hugepages there;
// podvisor applies cpu and memory.
func (c *supportChecker) checkPodResources(spec *v1.PodSpec) {
	r := spec.Resources
	if r == nil {
		return
	}
	for _, l := range []struct {
		path string
		rl   v1.ResourceList
	}{{"spec.resources.limits", r.Limits}, {"spec.resources.requests", r.Requests}} {
		for _, name := range slices.Sorted(maps.Keys(l.rl)) {
			if name != v1.ResourceCPU && name != v1.ResourceMemory {
				c.p.invalid(l.path+"["+string(name)+"]", notSupported("pod-level cpu and memory only"))
			}
		}
	}
}
