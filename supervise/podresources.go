package supervise

import (
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Pod-level resources (spec.resources), as kubelet applies them with its
// PodLevelResources feature (on by default): the pod cgroup takes its
// limits from the pod's (pkg/kubelet/cm ResourceConfigForPod), a container
// without a cpu or memory limit of its own is bounded by the pod's
// (kuberuntime getCPULimit and getMemoryLimit), the QoS class is the
// pod's (status.QOSClass), Burstable containers share the pod's memory
// request not given to containers in their OOM score, and the downward
// API's resourceFieldRef falls back to the pod's limits before the
// node's allocatable (defaultPodLimitsForDownwardAPI).

// podLevelSet is Kubernetes' IsPodLevelResourcesSet: spec.resources
// requests or limits cpu or memory.
func podLevelSet(spec *v1.PodSpec) bool {
	return resourcehelper.IsPodLevelResourcesSet(&v1.Pod{Spec: v1.PodSpec{Resources: spec.Resources}})
}

// podLevelCgroup is the pod cgroup of a pod with pod-level resources, as
// kubelet's ResourceConfigForPod computes it: shares from the pod's cpu
// request, the quota and memory limit from the pod's limits (a limit the
// pod does not set is the containers' sum, and only when every container
// has one; a Guaranteed pod has both). The pod's overhead is left out,
// as podResources leaves it out.
func podLevelCgroup(spec *v1.PodSpec) Resources {
	pod := &v1.Pod{Spec: *spec}
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	reqs := resourcehelper.PodRequests(pod, opts)
	lims := resourcehelper.PodLimits(pod, opts)
	cpuDeclared, memDeclared := true, true
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if list[i].Resources.Limits.Cpu().IsZero() {
				cpuDeclared = false
			}
			if list[i].Resources.Limits.Memory().IsZero() {
				memDeclared = false
			}
		}
	}
	if !spec.Resources.Limits.Cpu().IsZero() {
		cpuDeclared = true
	}
	if !spec.Resources.Limits.Memory().IsZero() {
		memDeclared = true
	}
	r := Resources{CPUShares: cpuShares(reqs.Cpu().MilliValue()), CPUPeriod: quotaPeriod}
	switch status.QOSClass(spec) {
	case v1.PodQOSBestEffort:
		r.CPUShares = minShares
		return r
	case v1.PodQOSGuaranteed:
		cpuDeclared, memDeclared = true, true
	}
	if cpuDeclared {
		r.CPUQuota = cpuQuota(lims.Cpu().MilliValue())
	}
	if memDeclared {
		r.MemoryLimit = lims.Memory().Value()
	}
	return r
}

// withPodLimits returns c with the pod-level cpu and memory limits where
// it has none of its own, as kubelet's getCPULimit and getMemoryLimit
// bound such a container by the pod's; c itself when the pod has no
// pod-level resources or nothing is missing.
func withPodLimits(spec *v1.PodSpec, c *v1.Container) *v1.Container {
	if !podLevelSet(spec) {
		return c
	}
	var out *v1.Container
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		q, ok := spec.Resources.Limits[name]
		if !ok || q.IsZero() {
			continue
		}
		if own := c.Resources.Limits[name]; !own.IsZero() {
			continue
		}
		if out == nil {
			out = c.DeepCopy()
			if out.Resources.Limits == nil {
				out.Resources.Limits = v1.ResourceList{}
			}
		}
		out.Resources.Limits[name] = q.DeepCopy()
	}
	if out == nil {
		return c
	}
	return out
}

// containerResourcesIn is containerResources for container c of a pod
// with spec: a limit c lacks is the pod-level one, and a cpu request it
// lacks defaults to that limit, as kubelet's.
func containerResourcesIn(spec *v1.PodSpec, c *v1.Container) Resources {
	return containerResources(withPodLimits(spec, c))
}

// podMemoryRemainder is kubelet's remainingPodMemReqPerContainer: the
// pod-level memory request not requested by its containers, shared
// equally among them (0 without a pod-level memory request).
func podMemoryRemainder(pod *v1.Pod) int64 {
	if !resourcehelper.IsPodLevelRequestsSet(pod) || pod.Spec.Resources.Requests.Memory().IsZero() {
		return 0
	}
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	if n == 0 {
		return 0
	}
	aggr := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	rest := max(pod.Spec.Resources.Requests.Memory().Value()-aggr.Memory().Value(), 0)
	return rest / n
}

// downwardAllocatable is the allocatable a resourceFieldRef's missing
// limit defaults to: the node's, with the pod-level cpu and memory
// limits in place of the node's where the pod sets them, as kubelet's
// defaultPodLimitsForDownwardAPI.
func downwardAllocatable(pod *v1.Pod, node v1.ResourceList) v1.ResourceList {
	if !resourcehelper.IsPodLevelLimitsSet(pod) {
		return node
	}
	out := node.DeepCopy()
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if !resourcehelper.IsSupportedPodLevelResource(name) {
			continue
		}
		if q, ok := pod.Spec.Resources.Limits[name]; ok && !q.IsZero() {
			if _, ok := out[name]; ok {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}
