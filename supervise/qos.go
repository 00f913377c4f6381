package supervise

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// oomScoreAdj is kubelet's policy (pkg/kubelet/qos/policy.go).
func oomScoreAdj(qos v1.PodQOSClass, memRequest, machineMemory int64, critical bool) int {
	switch {
	case critical:
		return -997
	case qos == v1.PodQOSGuaranteed:
		return -997
	case qos == v1.PodQOSBestEffort:
		return 1000
	}
	adj := 1000 - (1000*memRequest)/max(machineMemory, 1)
	return int(min(max(adj, 2), 999))
}

// oomScoreAdj computes kubelet's OOM score for the container, raised to
// what this host accepts (nested and rootless hosts refuse negative values),
// with a warning when it had to be raised.
func (s *Supervisor) oomScoreAdj(pod *v1.Pod, c *v1.Container) (int, string) {
	critical := pod.Spec.PriorityClassName == "system-node-critical" || pod.Spec.PriorityClassName == "system-cluster-critical"
	adj := oomScoreAdj(status.QOSClass(&pod.Spec), c.Resources.Requests.Memory().Value(), s.machineMem, critical)
	if adj < s.oomFloor {
		return s.oomFloor, fmt.Sprintf("this host refuses oom_score_adj %d; using %d", adj, s.oomFloor)
	}
	return adj, ""
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
