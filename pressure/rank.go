package pressure

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Priorities of the built-in priority classes (scheduling/v1).
const (
	SystemNodeCriticalPriority    = 2000001000
	SystemClusterCriticalPriority = 2000000000
)

// Priority is a pod's priority: spec.priority when set, else that of its
// priorityClassName when it names a built-in class (a static pod has no
// admission to resolve it), else 0.
func Priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	switch pod.Spec.PriorityClassName {
	case "system-node-critical":
		return SystemNodeCriticalPriority
	case "system-cluster-critical":
		return SystemClusterCriticalPriority
	}
	return 0
}

// Evictable reports whether the pod may be evicted for node pressure:
// not when its priority is system-node-critical's or higher (kubeadm's
// control plane).
func Evictable(pod *v1.Pod) bool { return Priority(pod) < SystemNodeCriticalPriority }

// PodUsage is what a pod uses, as the ranking needs it.
type PodUsage struct {
	Pod *v1.Pod
	// Containers are the running containers' use, by name.
	Containers map[string]ContainerUsage
	// Volumes is the disk use (bytes) of its emptyDir volumes, by name.
	Volumes map[string]uint64
	// Inodes are the inodes its emptyDirs and logs take.
	Inodes uint64
	// Pids are the tasks in its cgroup.
	Pids uint64
	// Known is false when the pod's use could not be read: it ranks first,
	// as kubelet ranks a pod without stats.
	Known bool
}

// ContainerUsage is one container's use.
type ContainerUsage struct {
	Memory uint64 // working set
	Logs   uint64 // its log files
	Rootfs uint64 // its writable layer, when known
	Pids   uint64
}

// memory is the pod's working set.
func (u PodUsage) memory() int64 {
	var n uint64
	for _, c := range u.Containers {
		n += c.Memory
	}
	return int64(n)
}

// disk is the pod's local ephemeral storage use: its containers' writable
// layers and logs and its emptyDirs.
func (u PodUsage) disk() int64 {
	var n uint64
	for _, c := range u.Containers {
		n += c.Logs + c.Rootfs
	}
	for _, v := range u.Volumes {
		n += v
	}
	return int64(n)
}

func (u PodUsage) pids() int64 {
	n := u.Pids
	for _, c := range u.Containers {
		n += c.Pids
	}
	return int64(n)
}

// request is the pod's request of r as kubelet's GetResourceRequestQuantity
// counts it: the larger of its containers' sum and its largest init
// container's; with pod-level resources the pod's own request alone (none
// for a resource pod-level resources do not cover).
func request(pod *v1.Pod, r v1.ResourceName) int64 {
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if q, ok := pod.Spec.Resources.Requests[r]; ok && resourcehelper.IsSupportedPodLevelResource(r) {
			return q.Value()
		}
		return 0
	}
	var sum, initMax int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[r]; ok {
			sum += q.Value()
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Requests[r]; ok {
			initMax = max(initMax, q.Value())
		}
	}
	return max(sum, initMax)
}

// Rank orders pods for eviction under sig's pressure, first to go first,
// as kubelet's rankMemoryPressure, rankDiskPressureFunc and
// rankPIDPressure: pods without stats first; then, for memory and disk,
// those using more than they request; then lower priority; then larger use
// less request (processes for pids, inodes for inodes).
func Rank(sig Signal, pods []PodUsage) {
	usage := func(u PodUsage) (use, req int64) {
		switch sig {
		case MemoryAvailable:
			return u.memory(), request(u.Pod, v1.ResourceMemory)
		case NodeFsAvailable, ImageFsAvailable:
			return u.disk(), request(u.Pod, v1.ResourceEphemeralStorage)
		case NodeFsInodesFree, ImageFsInodesFree:
			return int64(u.Inodes), 0
		}
		return u.pids(), 0
	}
	slices.SortStableFunc(pods, func(a, b PodUsage) int {
		if a.Known != b.Known {
			return cmpTrueFirst(!a.Known, !b.Known)
		}
		ua, ra := usage(a)
		ub, rb := usage(b)
		if sig != PIDAvailable && sig != NodeFsInodesFree && sig != ImageFsInodesFree {
			if c := cmpTrueFirst(ua > ra, ub > rb); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(Priority(a.Pod), Priority(b.Pod)); c != 0 {
			return c
		}
		return cmp.Compare(ub-rb, ua-ra)
	})
}

func cmpTrueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// quantity formats n of sig's unit as kubelet's messages do (a binary
// quantity for bytes).
func quantity(sig Signal, n uint64) string {
	f := resource.DecimalSI
	if sig.bytes() {
		f = resource.BinarySI
	}
	return resource.NewQuantity(int64(n), f).String()
}
