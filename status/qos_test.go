package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Cases from Kubernetes' pkg/apis/core/v1/helper/qos/qos_test.go TestComputePodQOS.

func resources(cpu, memory string) v1.ResourceList {
	res := v1.ResourceList{}
	if cpu != "" {
		res[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		res[v1.ResourceMemory] = resource.MustParse(memory)
	}
	return res
}

func withResource(name, value string, rl v1.ResourceList) v1.ResourceList {
	rl[v1.ResourceName(name)] = resource.MustParse(value)
	return rl
}

func ctr(requests, limits v1.ResourceList) v1.Container {
	return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func TestQOSClass(t *testing.T) {
	tests := []struct {
		name       string
		containers []v1.Container
		inits      []v1.Container
		pod        *v1.ResourceRequirements
		want       v1.PodQOSClass
	}{
		{name: "guaranteed", containers: []v1.Container{ctr(resources("100m", "100Mi"), resources("100m", "100Mi"))}, want: v1.PodQOSGuaranteed},
		{name: "guaranteed-guaranteed", containers: []v1.Container{
			ctr(resources("100m", "100Mi"), resources("100m", "100Mi")),
			ctr(resources("100m", "100Mi"), resources("100m", "100Mi")),
		}, want: v1.PodQOSGuaranteed},
		{name: "best-effort-best-effort", containers: []v1.Container{
			ctr(resources("", ""), resources("", "")),
			ctr(resources("", ""), resources("", "")),
		}, want: v1.PodQOSBestEffort},
		{name: "best-effort", containers: []v1.Container{ctr(resources("", ""), resources("", ""))}, want: v1.PodQOSBestEffort},
		{name: "best-effort-burstable", containers: []v1.Container{
			ctr(resources("", ""), resources("", "")),
			ctr(resources("1", ""), resources("2", "")),
		}, want: v1.PodQOSBurstable},
		{name: "best-effort-guaranteed", containers: []v1.Container{
			ctr(resources("", ""), resources("", "")),
			ctr(resources("10m", "100Mi"), resources("10m", "100Mi")),
		}, want: v1.PodQOSBurstable},
		{name: "burstable-cpu-guaranteed-memory", containers: []v1.Container{ctr(resources("", "100Mi"), resources("", "100Mi"))}, want: v1.PodQOSBurstable},
		{name: "burstable-no-limits", containers: []v1.Container{ctr(resources("100m", "100Mi"), resources("", ""))}, want: v1.PodQOSBurstable},
		{name: "burstable-guaranteed", containers: []v1.Container{
			ctr(resources("1", "100Mi"), resources("2", "100Mi")),
			ctr(resources("100m", "100Mi"), resources("100m", "100Mi")),
		}, want: v1.PodQOSBurstable},
		{name: "burstable-unbounded-but-requests-match-limits", containers: []v1.Container{
			ctr(resources("100m", "100Mi"), resources("200m", "200Mi")),
			ctr(resources("100m", "100Mi"), resources("", "")),
		}, want: v1.PodQOSBurstable},
		{name: "burstable-1", containers: []v1.Container{ctr(resources("10m", "100Mi"), resources("100m", "200Mi"))}, want: v1.PodQOSBurstable},
		{name: "burstable-2", containers: []v1.Container{ctr(resources("0", "0"), resources("100m", "200Mi"))}, want: v1.PodQOSBurstable},
		{name: "best-effort-hugepages", containers: []v1.Container{ctr(
			withResource("hugepages-2Mi", "1Gi", resources("0", "0")),
			withResource("hugepages-2Mi", "1Gi", resources("0", "0")),
		)}, want: v1.PodQOSBestEffort},
		{name: "init-container",
			containers: []v1.Container{ctr(resources("", ""), resources("", ""))},
			inits:      []v1.Container{ctr(resources("10m", "100Mi"), resources("100m", "200Mi"))},
			want:       v1.PodQOSBurstable},
		{name: "guaranteed-with-guaranteed-init-container",
			containers: []v1.Container{ctr(resources("10m", "100Mi"), resources("10m", "100Mi"))},
			inits:      []v1.Container{ctr(resources("5m", "10Mi"), resources("5m", "10Mi"))},
			want:       v1.PodQOSGuaranteed},
		{name: "guaranteed-with-pod-level-resources",
			containers: []v1.Container{ctr(resources("", ""), resources("", ""))},
			pod:        &v1.ResourceRequirements{Requests: resources("10m", "100Mi"), Limits: resources("10m", "100Mi")},
			want:       v1.PodQOSGuaranteed},
		{name: "guaranteed-with-pod-and-container-level-resources",
			containers: []v1.Container{ctr(resources("3m", "10Mi"), resources("5m", "20Mi"))},
			pod:        &v1.ResourceRequirements{Requests: resources("10m", "100Mi"), Limits: resources("10m", "100Mi")},
			want:       v1.PodQOSGuaranteed},
		{name: "burstable-with-pod-level-resources",
			containers: []v1.Container{ctr(resources("", ""), resources("", ""))},
			pod:        &v1.ResourceRequirements{Requests: resources("10m", "10Mi"), Limits: resources("20m", "50Mi")},
			want:       v1.PodQOSBurstable},
		{name: "burstable-with-pod-and-container-level-resources",
			containers: []v1.Container{ctr(resources("5m", "10Mi"), resources("5m", "10Mi"))},
			pod:        &v1.ResourceRequirements{Requests: resources("10m", "10Mi"), Limits: resources("20m", "50Mi")},
			want:       v1.PodQOSBurstable},
		{name: "burstable-with-pod-and-container-level-requests",
			containers: []v1.Container{ctr(resources("5m", "10Mi"), resources("", ""))},
			pod:        &v1.ResourceRequirements{Requests: resources("10m", "10Mi"), Limits: resources("", "")},
			want:       v1.PodQOSBurstable},
		{name: "burstable-with-pod-and-container-level-resources-2",
			containers: []v1.Container{
				ctr(resources("5m", "10Mi"), resources("", "")),
				ctr(resources("5m", "10Mi"), resources("5m", "10Mi")),
			},
			pod:  &v1.ResourceRequirements{Requests: resources("10m", "10Mi"), Limits: resources("5m", "")},
			want: v1.PodQOSBurstable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1.PodSpec{Containers: tc.containers, InitContainers: tc.inits, Resources: tc.pod}
			if got := QOSClass(spec); got != tc.want {
				t.Errorf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}
