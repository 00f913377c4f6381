package supervise

import (
	"os"
	"strconv"
	"strings"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// kubelet's OOM score adjustments (pkg/kubelet/qos/policy.go).
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// systemNodeCritical is the priority class of pods the node needs most
// (scheduling.SystemNodeCritical).
const systemNodeCritical = "system-node-critical"

// nodeCritical is kubelet's IsNodeCriticalPod (pkg/kubelet/types): a
// critical pod whose priority class is system-node-critical. Every pod here
// is a static pod, which IsCriticalPod counts as critical whatever its
// priority, so only the class name decides; system-cluster-critical is not
// node-critical.
func nodeCritical(pod *v1.Pod) bool {
	return pod.Spec.PriorityClassName == systemNodeCritical
}

// oomScoreAdj is kubelet's GetContainerOOMScoreAdjust
// (pkg/kubelet/qos/policy.go) without its sidecar adjustment:
// node-critical and Guaranteed pods -997, BestEffort 1000, Burstable
// 1000 - 1000*request/capacity (the request plus an equal share of the
// pod-level memory request its containers leave unrequested), at least
// 1000 + -997 = 3 so a Burstable container never outranks a Guaranteed one,
// and 999 rather than 1000 so it outlives BestEffort ones.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int {
	if nodeCritical(pod) {
		return guaranteedOOMScoreAdj
	}
	switch status.QOSClass(&pod.Spec) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	adj := 1000 - (1000*(c.Resources.Requests.Memory().Value()+podMemoryRemainder(pod)))/max(memoryCapacity, 1)
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj == besteffortOOMScoreAdj {
		return int(adj - 1)
	}
	return int(adj)
}

// probeOOMFloor finds whether this process may lower an oom_score_adj:
// it tries on itself and restores the old value.
func probeOOMFloor() int {
	const p = "/proc/self/oom_score_adj"
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	orig, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	if orig < 0 {
		return -1000
	}
	if err := os.WriteFile(p, []byte("-1"), 0o644); err != nil {
		return orig
	}
	os.WriteFile(p, []byte(strconv.Itoa(orig)), 0o644)
	return -1000
}
