package printers

import (
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
)

func TestNodePrinters(t *testing.T) {
	now := time.Unix(100000, 0)
	n := &api.Node{Name: "edge-1", Version: "v1.2.3", StartTime: now.Add(-2 * time.Hour), Time: now,
		Conditions: []v1.NodeCondition{
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
			{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue, Reason: "KubeletHasDiskPressure"},
			{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"},
		},
		Signals: []api.NodeSignal{
			{Signal: "nodefs.available", Measured: true, Available: 5 << 20, Capacity: 64 << 20, Thresholds: []string{"nodefs.available<10%"}, Met: true},
			{Signal: "pid.available", Measured: true, Available: 4000, Capacity: 4194304},
			{Signal: "imagefs.available"},
		}}
	var b strings.Builder
	if err := Node(&b, n, false, now); err != nil {
		t.Fatal(err)
	}
	want := "NAME     STATUS   PRESSURE       AGE    VERSION\nedge-1   Ready    DiskPressure   120m   v1.2.3\n"
	if b.String() != want {
		t.Errorf("get node:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := DescribeNode(&b, n, now); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"DiskPressure     True", "nodefs.available    5Mi", "64Mi", "nodefs.available<10%", "pid.available       4000", "imagefs.available   <unknown>"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("describe node lacks %q:\n%s", line, b.String())
		}
	}
}
