package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// QOSClass computes the pod's QoS class as Kubernetes does
// (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS). Only cpu and memory
// count, and init containers count like the others:
//   - BestEffort: no container requests or limits cpu or memory;
//   - Guaranteed: every container has cpu and memory limits, and the summed
//     requests equal the summed limits;
//   - Burstable: anything else.
//
// Pod-level resources (spec.resources, the PodLevelResources feature), when
// they request or limit cpu or memory, decide alone, as they do in
// Kubernetes.
//
// Requests are compared as given: the API server defaults a missing request
// to its limit, so a manifest should be defaulted the same way before this is
// called.
func QOSClass(spec *v1.PodSpec) v1.PodQOSClass {
	if resourcehelper.IsPodLevelResourcesSet(&v1.Pod{Spec: v1.PodSpec{Resources: spec.Resources}}) {
		return qosOf([]*v1.ResourceRequirements{spec.Resources})
	}
	reqs := make([]*v1.ResourceRequirements, 0, len(spec.Containers)+len(spec.InitContainers))
	for i := range spec.Containers {
		reqs = append(reqs, &spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		reqs = append(reqs, &spec.InitContainers[i].Resources)
	}
	return qosOf(reqs)
}

// isQOSResource says whether a resource counts for QoS.
func isQOSResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory
}

// qosOf sums requests and limits over rs the way GetPodQOS does.
func qosOf(rs []*v1.ResourceRequirements) v1.PodQOSClass {
	requests := v1.ResourceList{}
	limits := v1.ResourceList{}
	guaranteed := true
	add := func(into v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
		if cur, ok := into[name]; ok {
			q = q.DeepCopy()
			q.Add(cur)
		}
		into[name] = q.DeepCopy()
	}
	for _, r := range rs {
		for name, q := range r.Requests {
			if isQOSResource(name) && q.Sign() > 0 {
				add(requests, name, q)
			}
		}
		cpuLimit, memLimit := false, false
		for name, q := range r.Limits {
			if isQOSResource(name) && q.Sign() > 0 {
				add(limits, name, q)
				cpuLimit = cpuLimit || name == v1.ResourceCPU
				memLimit = memLimit || name == v1.ResourceMemory
			}
		}
		if !cpuLimit || !memLimit {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
