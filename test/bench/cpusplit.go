package main

import (
	"os"
)

// cpuSplit is the CPU time (ms) each part of a start used between two
// samples: t0 and the last container's first instruction.
type cpuSplit struct {
	// Manager is the process that starts the pods: podvisor, or the
	// benchmark itself for the baseline and the floor (its polling for
	// the started files included).
	Manager float64 `json:"manager_ms"`
	// ManagerChildren is what the processes the manager ran and reaped
	// used: the CNI plugins.
	ManagerChildren float64 `json:"manager_children_ms"`
	// Containerd is the daemon and the processes it reaped (the shims'
	// start commands).
	Containerd float64 `json:"containerd_ms"`
	// Shims is the case's shims and the processes they reaped (runc).
	Shims float64 `json:"shims_ms"`
}

// Total is the sum of the parts.
func (c cpuSplit) Total() float64 {
	return c.Manager + c.ManagerChildren + c.Containerd + c.Shims
}

// medianCPU is each part's median over the splits.
func medianCPU(cs []cpuSplit) cpuSplit {
	part := func(f func(cpuSplit) float64) float64 {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = f(c)
		}
		return median(v)
	}
	return cpuSplit{
		Manager:         part(func(c cpuSplit) float64 { return c.Manager }),
		ManagerChildren: part(func(c cpuSplit) float64 { return c.ManagerChildren }),
		Containerd:      part(func(c cpuSplit) float64 { return c.Containerd }),
		Shims:           part(func(c cpuSplit) float64 { return c.Shims }),
	}
}

// cpuSample is one reading of the parts a cpuSplit measures.
type cpuSample struct {
	manager, containerd procStat
	shims               map[int]procStat
}

// sampleCPU reads the CPU times of the manager (pid), the containerd
// daemon and the shims that match; nothing else of them, so that the
// sample costs the benchmark (the baseline's manager) little. A part that
// cannot be read is zero.
func sampleCPU(manager int, containerd, shims func(proc) bool) cpuSample {
	s := cpuSample{shims: map[int]procStat{}}
	s.manager, _ = readTicks(manager)
	for _, p := range listProcs() {
		switch {
		case containerd(p):
			s.containerd, _ = readTicks(p.pid)
		case shims(p):
			if st, err := readTicks(p.pid); err == nil {
				s.shims[p.pid] = st
			}
		}
	}
	return s
}

// cpuBetween is the CPU each part used from a to b. A shim that is in b
// only started in between and counts whole; one that is in a only (it
// exited) is not counted.
func cpuBetween(a, b cpuSample) cpuSplit {
	ms := func(ticks uint64) float64 { return float64(ticks) * 1000 / clockTicks }
	sub := func(x, y uint64) uint64 {
		if x < y {
			return 0
		}
		return x - y
	}
	c := cpuSplit{
		Manager:         ms(sub(b.manager.ticks, a.manager.ticks)),
		ManagerChildren: ms(sub(b.manager.childTicks, a.manager.childTicks)),
		Containerd:      ms(sub(b.containerd.ticks+b.containerd.childTicks, a.containerd.ticks+a.containerd.childTicks)),
	}
	for pid, st := range b.shims {
		before := a.shims[pid] // zero for a shim started in between
		c.Shims += ms(sub(st.ticks+st.childTicks, before.ticks+before.childTicks))
	}
	return c
}

// self is the benchmark's own pid, the baseline's manager.
var self = os.Getpid()
