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
	for _, c := range []cpuSplit{{Manager: 100, ManagerChildren: 10, Containerd: 50, Shims: 300}, {Manager: 300, ManagerChildren: 30, Containerd: 70, Shims: 500}, {Manager: 200, ManagerChildren: 20, Containerd: 60, Shims: 400}} {
		r.Runs = append(r.Runs, &runResult{Case: "podvisor", N: 30, StartsMS: []float64{1}, First: 1, Last: 1, Median: 1, CPU: c})
	}
	r.summarize([]int{30})
	if len(r.Summaries) != 1 {
		t.Fatalf("summaries %+v", r.Summaries)
	}
	want := cpuSplit{Manager: 200, ManagerChildren: 20, Containerd: 60, Shims: 400}
	if got := r.Summaries[0].CPU; got != want {
		t.Fatalf("median split %+v, want %+v", got, want)
	}
	var out bytes.Buffer
	r.printStart(&out)
	if !strings.Contains(out.String(), "| podvisor | 30 | 200 | 20 | 60 | 400 | 680 |") {
		t.Errorf("the CPU table lacks podvisor's row:\n%s", out.String())
	}
}
