package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestCPUBetween(t *testing.T) {
	a := cpuSample{
		manager:    procStat{ticks: 10, childTicks: 5},
		containerd: procStat{ticks: 20, childTicks: 3},
		shims:      map[int]procStat{1: {ticks: 4, childTicks: 1}, 2: {ticks: 7}},
	}
	b := cpuSample{
		manager:    procStat{ticks: 30, childTicks: 45},
		containerd: procStat{ticks: 25, childTicks: 8},
		// shim 1 used 4 ticks more, shim 3 started in between (3 ticks,
		// counted whole), shim 2 exited (not counted).
		shims: map[int]procStat{1: {ticks: 6, childTicks: 3}, 3: {ticks: 2, childTicks: 1}},
	}
	got := cpuBetween(a, b)
	want := cpuSplit{Manager: 200, ManagerChildren: 400, Containerd: 100, Shims: 70}
	if got != want {
		t.Fatalf("cpuBetween = %+v, want %+v", got, want)
	}
	if got.Total() != 770 {
		t.Errorf("total %v, want 770", got.Total())
	}
	// A pid reused by a process that has used less: nothing, not a
	// wrapped-around count.
	b.shims[1] = procStat{ticks: 1}
	if got := cpuBetween(a, b); got.Shims != 30 {
		t.Errorf("shims with a reused pid: %v ms, want 30 (the new shim only)", got.Shims)
	}
}

// TestSampleCPU reads this process as the manager: its own CPU goes up
// with work, and nothing matches as containerd or a shim.
func TestSampleCPU(t *testing.T) {
	none := func(proc) bool { return false }
	a := sampleCPU(os.Getpid(), none, none)
	if a.containerd != (procStat{}) || len(a.shims) != 0 {
		t.Errorf("sample %+v: matched processes though nothing should", a)
	}
	deadline := time.Now().Add(10 * time.Second)
	x := uint64(1)
	for sampleCPU(os.Getpid(), none, none).manager.ticks <= a.manager.ticks {
		if time.Now().After(deadline) {
			t.Fatal("this process's CPU time did not go up in 10 s of work")
		}
		for i := range 1 << 20 {
			x = x*31 + uint64(i)
		}
	}
	sink = x
}

var sink uint64

func TestSummarizeCPU(t *testing.T) {
	r := &report{}
	for _, c := range []cpuSplit{{Manager: 100, ManagerChildren: 10, Containerd: 50, Shims: 300, Containers: 900}, {Manager: 300, ManagerChildren: 30, Containerd: 70, Shims: 500, Containers: 700}, {Manager: 200, ManagerChildren: 20, Containerd: 60, Shims: 400, Containers: 800}} {
		r.Runs = append(r.Runs, &runResult{Case: "podvisor", N: 30, StartsMS: []float64{1}, First: 1, Last: 1, Median: 1, CPU: c})
	}
	r.summarize([]int{30})
	if len(r.Summaries) != 1 {
		t.Fatalf("summaries %+v", r.Summaries)
	}
	want := cpuSplit{Manager: 200, ManagerChildren: 20, Containerd: 60, Shims: 400, Containers: 800}
	if got := r.Summaries[0].CPU; got != want {
		t.Fatalf("median split %+v, want %+v", got, want)
	}
	var out bytes.Buffer
	r.printStart(&out)
	if !strings.Contains(out.String(), "| podvisor | 30 | 200 | 20 | 60 | 400 | 800 | 1480 |") {
		t.Errorf("the CPU table lacks podvisor's row:\n%s", out.String())
	}
}

// A task's cgroup is found in /proc/<pid>/cgroup: the hierarchy holding
// cpuacct on v1 (a hybrid host's too), the unified one on v2.
func TestCgroupPaths(t *testing.T) {
	for _, tc := range []struct{ name, in, v1, v2 string }{
		{"hybrid", "9:name=systemd:/x\n2:cpu,cpuacct:/podvisor/pod1/c1\n1:memory:/podvisor/pod1/c1\n0::/\n", "/podvisor/pod1/c1", "/"},
		{"v2", "0::/podvisor/pod1/c1\n", "", "/podvisor/pod1/c1"},
		{"cpuacct alone", "3:cpuacct:/a\n2:cpu:/b\n", "/a", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1, v2, err := cgroupPaths([]byte(tc.in))
			if err != nil || v1 != tc.v1 || v2 != tc.v2 {
				t.Errorf("cgroupPaths = %q, %q, %v; want %q, %q", v1, v2, err, tc.v1, tc.v2)
			}
		})
	}
	if _, _, err := cgroupPaths([]byte("garbage")); err == nil {
		t.Error("a malformed line gave no error")
	}
}

// This process's cgroup usage is read and is not zero.
func TestCgroupUsageSelf(t *testing.T) {
	n, err := cgroupUsageNS("/sys/fs/cgroup", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("this process's cgroup used no CPU")
	}
}
