package supervise

import (
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOOMScoreAdj runs the cases of kubelet's own table
// (pkg/kubelet/qos/policy_test.go TestGetContainerOOMScoreAdjust): the same
// pods, memory capacities and allowed ranges. Its sidecar cases are left
// out: podvisor rejects container restartPolicy.
func TestOOMScoreAdj(t *testing.T) {
	const standardMemoryAmount = 8000000000
	res := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	pod := func(class string, priority int32, cs ...v1.Container) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{PriorityClassName: class, Containers: cs}}
		if priority != 0 {
			p.Spec.Priority = &priority
		}
		return p
	}
	ctr := func(name string, req, lim v1.ResourceList) v1.Container {
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	half := strconv.FormatInt(standardMemoryAmount/2, 10)
	nearlyAll := strconv.FormatInt(standardMemoryAmount-1, 10)
	eighth := strconv.FormatInt(standardMemoryAmount/8, 10)
	eighthLimit := strconv.FormatInt(1000+standardMemoryAmount/8, 10)
	// scheduling.SystemCriticalPriority, and system-node-critical's value.
	const systemCritical, systemNodeCritical = 2000000000, 2000000000 + 1000

	initPod := pod("", 0, ctr("main-1", res("memory", eighth), res("memory", eighthLimit)))
	initPod.Spec.InitContainers = []v1.Container{ctr("init-container", res("memory", eighth), res("memory", eighthLimit))}

	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		capacity int64
		low      map[string]int // container name → lowest and highest allowed
		high     map[string]int
	}{
		{"cpu-limit", pod("", 0, ctr("c", nil, res("cpu", "10"))), 4000000000,
			map[string]int{"c": 999}, map[string]int{"c": 999}},
		{"memory-limit-cpu-request", pod("", 0, ctr("c", res("cpu", "0"), res("memory", "10G"))), 8000000000,
			map[string]int{"c": 999}, map[string]int{"c": 999}},
		{"zero-memory-limit", pod("", 0, ctr("c", nil, res("memory", "0"))), 7230457451,
			map[string]int{"c": 1000}, map[string]int{"c": 1000}},
		{"no-request-limit", pod("", 0, ctr("c", nil, nil)), 4000000000,
			map[string]int{"c": 1000}, map[string]int{"c": 1000}},
		{"equal-request-limit-cpu-memory", pod("", 0, ctr("c", res("memory", "10G", "cpu", "5m"), res("cpu", "5m", "memory", "10G"))), 123456789,
			map[string]int{"c": -997}, map[string]int{"c": -997}},
		{"cpu-unlimited-memory-limited-with-requests", pod("", 0, ctr("c", res("memory", half, "cpu", "5m"), res("memory", "10G"))), standardMemoryAmount,
			map[string]int{"c": 495}, map[string]int{"c": 505}},
		{"request-no-limit", pod("", 0, ctr("c", res("memory", nearlyAll, "cpu", "5m"), nil)), standardMemoryAmount,
			map[string]int{"c": 3}, map[string]int{"c": 3}},
		{"cluster-critical", pod("system-cluster-critical", systemCritical, ctr("c", nil, nil)), 4000000000,
			map[string]int{"c": 1000}, map[string]int{"c": 1000}},
		{"node-critical", pod("system-node-critical", systemNodeCritical, ctr("c", nil, nil)), 4000000000,
			map[string]int{"c": -997}, map[string]int{"c": -997}},
		{"burstable-unique-container-pod", pod("", 0, ctr("c", res("memory", eighth), res("memory", eighthLimit))), standardMemoryAmount,
			map[string]int{"c": 875}, map[string]int{"c": 880}},
		{"burstable-mixed-unique-main-container-pod", initPod, standardMemoryAmount,
			map[string]int{"init-container": 875, "main-1": 875}, map[string]int{"init-container": 880, "main-1": 880}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append(slices.Clone(tc.pod.Spec.InitContainers), tc.pod.Spec.Containers...)
			for i := range all {
				c := &all[i]
				if got := oomScoreAdj(tc.pod, c, tc.capacity); got < tc.low[c.Name] || got > tc.high[c.Name] {
					t.Errorf("oom_score_adj of %s = %d, want %d..%d", c.Name, got, tc.low[c.Name], tc.high[c.Name])
				}
			}
		})
	}
}

func TestNames(t *testing.T) {
	if got := manifestName("web-node1", "node1"); got != "web" {
		t.Errorf("manifestName = %q", got)
	}
	if got := manifestName("web", "node1"); got != "web" {
		t.Errorf("manifestName without suffix = %q", got)
	}
	long := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-very-long-pod-name-that-goes-on-and-on-and-on-and-on-and-on-x.y-node"}}
	if h := podHostname(long); len(h) > 63 || h[len(h)-1] == '-' || h[len(h)-1] == '.' {
		t.Errorf("hostname %q", h)
	}
	named := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Hostname: "h"}}
	if podHostname(named) != "h" {
		t.Error("spec.hostname not used")
	}
}
