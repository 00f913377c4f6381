package pressure

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestDecide(t *testing.T) {
	ts, err := Thresholds("memory.available<100", "nodefs.available<50%", "nodefs.available=30s", "memory.available=20")
	if err != nil {
		t.Fatal(err)
	}
	d := decider{thresholds: ts, transition: time.Minute}
	t0 := time.Unix(1000, 0)
	mem := func(avail uint64) Observation { return Observation{Available: avail, Capacity: 1000} }
	type step struct {
		at       time.Duration
		obs      Observations
		pressure string // conditions under pressure, space separated
		act      string // signals acted on
	}
	for i, s := range []step{
		{0, Observations{MemoryAvailable: mem(500), NodeFsAvailable: mem(900)}, "", ""},
		// hard: acts at once; soft: condition at once, acts after its grace
		{10 * time.Second, Observations{MemoryAvailable: mem(99), NodeFsAvailable: mem(400)}, "MemoryPressure DiskPressure", "memory.available"},
		{30 * time.Second, Observations{MemoryAvailable: mem(99), NodeFsAvailable: mem(400)}, "MemoryPressure DiskPressure", "memory.available"},
		{40 * time.Second, Observations{MemoryAvailable: mem(99), NodeFsAvailable: mem(400)}, "MemoryPressure DiskPressure", "memory.available nodefs.available"},
		// past the threshold but not past its minimum reclaim: still acted on
		{50 * time.Second, Observations{MemoryAvailable: mem(110), NodeFsAvailable: mem(600)}, "MemoryPressure DiskPressure", "memory.available"},
		// past the minimum reclaim: resolved; conditions stay for the transition period
		{60 * time.Second, Observations{MemoryAvailable: mem(121), NodeFsAvailable: mem(600)}, "MemoryPressure DiskPressure", ""},
		// DiskPressure last met at 40s, MemoryPressure at 50s
		{99 * time.Second, Observations{MemoryAvailable: mem(121), NodeFsAvailable: mem(600)}, "MemoryPressure DiskPressure", ""},
		{100 * time.Second, Observations{MemoryAvailable: mem(121), NodeFsAvailable: mem(600)}, "MemoryPressure", ""},
		{110 * time.Second, Observations{MemoryAvailable: mem(121), NodeFsAvailable: mem(600)}, "", ""},
		// a soft threshold met again starts its grace period again
		{150 * time.Second, Observations{NodeFsAvailable: mem(400)}, "DiskPressure", ""},
		{170 * time.Second, Observations{NodeFsAvailable: mem(600)}, "DiskPressure", ""},
		{175 * time.Second, Observations{NodeFsAvailable: mem(400)}, "DiskPressure", ""},
		{205 * time.Second, Observations{NodeFsAvailable: mem(400)}, "DiskPressure", "nodefs.available"},
	} {
		dec := d.step(s.obs, t0.Add(s.at))
		var p []string
		for _, c := range Conditions {
			if dec.Pressure[c] {
				p = append(p, string(c))
			}
		}
		var a []string
		for _, th := range dec.Act {
			a = append(a, string(th.Signal))
		}
		if got := strings.Join(p, " "); got != s.pressure {
			t.Errorf("step %d (%s): pressure %q, want %q", i, s.at, got, s.pressure)
		}
		if got := strings.Join(a, " "); got != s.act {
			t.Errorf("step %d (%s): act on %q, want %q", i, s.at, got, s.act)
		}
	}
}

func TestConditionsKeepTransitionTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c1 := conditions(nil, map[v1.NodeConditionType]bool{}, t0)
	c2 := conditions(c1, map[v1.NodeConditionType]bool{v1.NodeDiskPressure: true}, t0.Add(time.Minute))
	c3 := conditions(c2, map[v1.NodeConditionType]bool{v1.NodeDiskPressure: true}, t0.Add(2*time.Minute))
	if c3[0].LastTransitionTime.Time != t0 || c3[1].LastTransitionTime.Time != t0.Add(time.Minute) {
		t.Errorf("transition times %v, %v", c3[0].LastTransitionTime, c3[1].LastTransitionTime)
	}
	if c3[1].Status != v1.ConditionTrue || c3[1].Reason != "KubeletHasDiskPressure" || c3[0].Reason != "KubeletHasSufficientMemory" {
		t.Errorf("conditions %+v", c3)
	}
}
