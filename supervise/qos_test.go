package supervise

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubelet's pkg/kubelet/qos/policy_test.go expectations.
func TestOOMScoreAdj(t *testing.T) {
	const mem = 4 << 30
	for _, tc := range []struct {
		qos      v1.PodQOSClass
		req      int64
		critical bool
		want     int
	}{
		{v1.PodQOSGuaranteed, mem / 2, false, -997},
		{v1.PodQOSBestEffort, 0, false, 1000},
		{v1.PodQOSBurstable, mem / 2, false, 500},
		{v1.PodQOSBurstable, mem, false, 2},
		{v1.PodQOSBurstable, 1, false, 999},
		{v1.PodQOSBestEffort, 0, true, -997},
	} {
		if got := oomScoreAdj(tc.qos, tc.req, mem, tc.critical); got != tc.want {
			t.Errorf("oomScoreAdj(%s, %d, critical=%v) = %d, want %d", tc.qos, tc.req, tc.critical, got, tc.want)
		}
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
