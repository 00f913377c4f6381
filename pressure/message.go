package pressure

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is the reason of an evicted pod's status, kubelet's.
const Reason = "Evicted"

// message is kubelet's evictionMessage for a pod evicted under t's
// signal, observed as o: the resource, the threshold and what was
// available, then each container using more than it requests.
func message(t Threshold, o Observation, u PodUsage) string {
	res := t.Signal.resource()
	msg := fmt.Sprintf("The node was low on resource: %s. ", res)
	msg += fmt.Sprintf("Threshold quantity: %s, available: %s. ", quantity(t.Signal, t.Value.Of(o.Capacity)), quantity(t.Signal, o.Available))
	if res != string(v1.ResourceMemory) && res != string(v1.ResourceEphemeralStorage) {
		return msg
	}
	for _, c := range u.Pod.Spec.Containers {
		cu, ok := u.Containers[c.Name]
		if !ok {
			continue
		}
		var use uint64
		if res == string(v1.ResourceMemory) {
			use = cu.Memory
		} else {
			use = cu.Rootfs + cu.Logs
		}
		req := c.Resources.Requests[v1.ResourceName(res)]
		usage := resource.NewQuantity(int64(use), resource.BinarySI)
		if usage.Cmp(req) > 0 {
			msg += fmt.Sprintf("Container %s was using %s, request is %s, has larger consumption of %s. ", c.Name, usage, req.String(), res)
		}
	}
	return msg
}

// emptyDirMessage and containerLimitMessage are kubelet's messages for a
// pod over its local storage limits.
func emptyDirMessage(volume string, limit resource.Quantity) string {
	return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", volume, limit.String())
}

func containerLimitMessage(container string, limit resource.Quantity) string {
	return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", container, limit.String())
}
