package pressure

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// kubelet's GetResourceRequestQuantity: with pod-level resources the pod's
// own request ranks it, and container requests are not counted.
func TestRequestPodLevel(t *testing.T) {
	ctrReq := v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	pod := &v1.Pod{Spec: v1.PodSpec{
		Resources:  &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}},
		Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: ctrReq}}},
	}}
	if got := request(pod, v1.ResourceMemory); got != 1<<30 {
		t.Errorf("memory request %d, want the pod's 1Gi", got)
	}
	if got := request(pod, v1.ResourceEphemeralStorage); got != 0 {
		t.Errorf("ephemeral-storage request %d, want 0 (not a pod-level resource; containers not counted)", got)
	}
	pod.Spec.Resources = nil
	if got := request(pod, v1.ResourceMemory); got != 100<<20 {
		t.Errorf("without pod-level resources: %d, want the container's 100Mi", got)
	}
}
