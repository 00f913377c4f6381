package supervise

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

const mi = 1 << 20

// kubelet's ResourceConfigForPod with pod-level resources
// (pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPodWithPodLevelResources).
func TestPodLevelCgroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want Resources
	}{
		{name: "pod limits and requests, containers without",
			spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "64Mi"), Limits: rl("cpu", "1", "memory", "128Mi")},
				Containers: []v1.Container{ctr("a", nil, nil), ctr("b", nil, nil)}},
			want: Resources{CPUShares: 512, CPUQuota: 100000, CPUPeriod: quotaPeriod, MemoryLimit: 128 * mi}},
		{name: "guaranteed pod",
			spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "1Gi")},
				Containers: []v1.Container{ctr("a", rl("cpu", "1"), nil)}},
			want: Resources{CPUShares: 2048, CPUQuota: 200000, CPUPeriod: quotaPeriod, MemoryLimit: 1024 * mi}},
		{name: "pod requests only: no limits",
			spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Requests: rl("memory", "64Mi", "cpu", "100m")},
				Containers: []v1.Container{ctr("a", nil, nil)}},
			want: Resources{CPUShares: 102, CPUPeriod: quotaPeriod}},
		{name: "pod memory limit, cpu limited by every container",
			spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: rl("memory", "256Mi")},
				Containers: []v1.Container{ctr("a", rl("cpu", "200m"), rl("cpu", "200m")), ctr("b", rl("cpu", "300m"), rl("cpu", "300m"))}},
			want: Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: quotaPeriod, MemoryLimit: 256 * mi}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podResources(&tc.spec); got != tc.want {
				t.Errorf("pod cgroup %+v, want %+v", got, tc.want)
			}
		})
	}
	// Without pod-level resources, the containers' sum as before.
	spec := v1.PodSpec{Resources: &v1.ResourceRequirements{}, Containers: []v1.Container{ctr("a", nil, rl("cpu", "1", "memory", "64Mi"))}}
	if got, want := podResources(&spec), (Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: quotaPeriod, MemoryLimit: 64 * mi}); got != want {
		t.Errorf("empty spec.resources: %+v, want the containers' %+v", got, want)
	}
}

// kubelet's getCPULimit and getMemoryLimit: a container without its own
// limit is bounded by the pod's, and its missing cpu request defaults to
// that limit.
func TestContainerResourcesIn(t *testing.T) {
	spec := &v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: rl("cpu", "1", "memory", "128Mi")}}
	bare := ctr("a", nil, nil)
	if got, want := containerResourcesIn(spec, &bare), (Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: quotaPeriod, MemoryLimit: 128 * mi}); got != want {
		t.Errorf("no limits: %+v, want the pod's %+v", got, want)
	}
	if bare.Resources.Limits != nil {
		t.Error("the spec's container was changed")
	}
	own := ctr("b", rl("cpu", "100m"), rl("memory", "32Mi"))
	if got, want := containerResourcesIn(spec, &own), (Resources{CPUShares: 102, CPUQuota: 100000, CPUPeriod: quotaPeriod, MemoryLimit: 32 * mi}); got != want {
		t.Errorf("own memory limit: %+v, want %+v", got, want)
	}
	if got, want := containerResourcesIn(&v1.PodSpec{}, &bare), (Resources{CPUShares: 2, CPUPeriod: quotaPeriod}); got != want {
		t.Errorf("no pod-level resources: %+v, want %+v", got, want)
	}
}

// resourceFieldRef falls back to the pod's limits, then the node's
// (kubelet's defaultPodLimitsForDownwardAPI), and kubelet's OOM score
// shares the pod's memory request among the containers.
func TestPodLevelDownwardAndOOM(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		Resources:  &v1.ResourceRequirements{Requests: rl("memory", "1Gi"), Limits: rl("memory", "2Gi")},
		Containers: []v1.Container{ctr("a", nil, nil), ctr("b", nil, rl("cpu", "1"))},
	}}
	node := rl("cpu", "4", "memory", "8Gi", "ephemeral-storage", "10Gi")
	for _, tc := range []struct {
		resource string
		want     string
	}{
		{"limits.memory", "2147483648"},
		{"limits.cpu", "4"},
		{"requests.memory", "0"},
	} {
		got, err := resourceFieldValue(&v1.ResourceFieldSelector{Resource: tc.resource}, pod, &pod.Spec.Containers[0], node)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.resource, got, err, tc.want)
		}
	}
	// Burstable: each container's request plus half the pod's 1Gi, of 4Gi.
	if got := oomScoreAdj(pod, &pod.Spec.Containers[0], 4<<30); got != 875 {
		t.Errorf("oom_score_adj %d, want 875", got)
	}
}
