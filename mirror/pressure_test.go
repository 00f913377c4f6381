package mirror

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestNodePressureConditions: with Options.Conditions the mirrored Node's
// pressure conditions are the eviction manager's, patched when they change.
func TestNodePressureConditions(t *testing.T) {
	disk := v1.ConditionFalse
	f := newFixture(t, func(o *Options) {
		o.Conditions = func() []v1.NodeCondition {
			c := []v1.NodeCondition{
				{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
				{Type: v1.NodeDiskPressure, Status: disk, Reason: "KubeletHasNoDiskPressure"},
				{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
			}
			if disk == v1.ConditionTrue {
				c[1].Reason, c[1].Message = "KubeletHasDiskPressure", "podvisor has disk pressure"
			}
			return c
		}
	})
	s := f.session()
	if err := s.syncNode(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := condition(f.node(), v1.NodeDiskPressure); c.Status != v1.ConditionFalse {
		t.Fatalf("DiskPressure %+v", c)
	}
	disk = v1.ConditionTrue
	f.clk.Step(nodeStatusUpdateFrequency)
	if err := s.syncNode(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := f.node()
	if c := condition(n, v1.NodeDiskPressure); c.Status != v1.ConditionTrue || c.Reason != "KubeletHasDiskPressure" || !c.LastTransitionTime.Time.Equal(f.clk.Now()) {
		t.Errorf("DiskPressure after the pressure: %+v", c)
	}
	if last := n.Status.Conditions[len(n.Status.Conditions)-1]; last.Type != v1.NodeReady {
		t.Errorf("Ready is not last: %v", n.Status.Conditions)
	}
}
