package pressure

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// hasLocalLimits reports whether the pod limits its local storage: a disk
// emptyDir with a sizeLimit, or a container with an ephemeral-storage
// limit. Only those pods are walked at every interval.
func hasLocalLimits(pod *v1.Pod) bool {
	for _, vol := range pod.Spec.Volumes {
		if ed := vol.EmptyDir; ed != nil && ed.Medium != v1.StorageMediumMemory && ed.SizeLimit != nil && !ed.SizeLimit.IsZero() {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if _, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok {
			return true
		}
	}
	return false
}

// overLimits is kubelet's localStorageEviction for one pod: the message
// for its first emptyDir over its sizeLimit or container over its
// ephemeral-storage limit, "" when none is.
func overLimits(u PodUsage) string {
	p := u.Pod
	for _, vol := range p.Spec.Volumes {
		ed := vol.EmptyDir
		if ed == nil || ed.Medium == v1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.IsZero() {
			continue
		}
		used := resource.NewQuantity(int64(u.Volumes[vol.Name]), resource.BinarySI)
		if used.Cmp(*ed.SizeLimit) > 0 {
			return emptyDirMessage(vol.Name, *ed.SizeLimit)
		}
	}
	for _, c := range p.Spec.Containers {
		limit, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
		if !ok {
			continue
		}
		cu := u.Containers[c.Name]
		used := resource.NewQuantity(int64(cu.Rootfs+cu.Logs), resource.BinarySI)
		if used.Cmp(limit) > 0 {
			return containerLimitMessage(c.Name, limit)
		}
	}
	return ""
}

// localStorage evicts every pod over its local storage limits and
// reports whether it evicted any, as kubelet does before acting on
// thresholds.
func (m *Manager) localStorage(ctx context.Context) bool {
	var limited []v1.Pod
	for _, p := range m.active() {
		if hasLocalLimits(&p) {
			limited = append(limited, p)
		}
	}
	if len(limited) == 0 {
		return false
	}
	evicted := false
	for _, u := range m.o.Usage.Usage(ctx, limited, true) {
		msg := overLimits(u)
		if msg == "" || !Evictable(u.Pod) {
			continue
		}
		if m.evictOne(ctx, u.Pod, Eviction{Message: msg}) {
			evicted = true
		}
	}
	return evicted
}
