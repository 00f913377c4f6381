package pressure

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestOverLimits(t *testing.T) {
	limited := func() *v1.Pod {
		p := pod("p", "", "", "")
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")}
		q := resource.MustParse("1Mi")
		p.Spec.Volumes = []v1.Volume{
			{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &q}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &q}}},
		}
		return p
	}
	for _, tc := range []struct {
		name string
		u    PodUsage
		want string
	}{
		{"within", PodUsage{Pod: limited(), Volumes: map[string]uint64{"disk": 1 << 20}, Containers: map[string]ContainerUsage{"c": {Rootfs: 5 << 20, Logs: 5 << 20}}}, ""},
		{"emptyDir over", PodUsage{Pod: limited(), Volumes: map[string]uint64{"disk": 1<<20 + 1}}, `Usage of EmptyDir volume "disk" exceeds the limit "1Mi". `},
		{"container over: writable layer and logs", PodUsage{Pod: limited(), Containers: map[string]ContainerUsage{"c": {Rootfs: 6 << 20, Logs: 5 << 20}}},
			`Container c exceeded its local ephemeral storage limit "10Mi". `},
		{"memory emptyDir is not disk", PodUsage{Pod: limited(), Volumes: map[string]uint64{"mem": 100 << 20}}, ""},
	} {
		if got := overLimits(tc.u); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if hasLocalLimits(pod("plain", "", "", "")) || !hasLocalLimits(limited()) {
		t.Error("hasLocalLimits is wrong")
	}
}
