package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/internal/stats"
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
	// Containers is the containers' own processes from their creation:
	// runc's init until it execs the command (the container's mounts,
	// /sys/fs/cgroup's among them), then the command. Shims does not hold
	// it: a shim reaps them only when they exit.
	Containers float64 `json:"containers_ms"`
}

// Total is the sum of the parts.
func (c cpuSplit) Total() float64 {
	return c.Manager + c.ManagerChildren + c.Containerd + c.Shims + c.Containers
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
		Containers:      part(func(c cpuSplit) float64 { return c.Containers }),
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

// containersCPU is the CPU time (ms) that the tasks of c's default
// namespace have used since they started, read at the end of a start's
// window (its containers are all new then): each task's cgroup's usage
// (nanoseconds; its runc init runs its mounts in it), since the process's
// own times in /proc count in 10 ms ticks, each rounded down. A task
// whose usage cannot be read counts nothing.
func containersCPU(ctx context.Context, c *client.Client) float64 {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return 0
	}
	var ns uint64
	for _, t := range resp.Tasks {
		if n, err := cgroupUsageNS("/sys/fs/cgroup", int(t.Pid)); err == nil {
			ns += n
		}
	}
	return float64(ns) / 1e6
}

// cgroupUsageNS reads the CPU usage of pid's cgroup under root with
// stats.Reader (podvisor's own reader of its containers' cgroups): the
// path of the hierarchy holding cpuacct on v1, the unified one on v2.
func cgroupUsageNS(root string, pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return 0, err
	}
	v1, v2, err := cgroupPaths(b)
	if err != nil {
		return 0, err
	}
	rel := v1
	if cgroupfs.IsV2(root) {
		rel = v2
	}
	u, err := stats.NewReader(root).Read(rel)
	return u.CPUNanos, err
}

// cgroupPaths returns, from the contents of /proc/<pid>/cgroup, the path
// in the v1 hierarchy holding cpuacct ("" with none) and the v2 path.
func cgroupPaths(b []byte) (v1, v2 string, err error) {
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			return "", "", fmt.Errorf("malformed cgroup line %q", line)
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok {
			return "", "", fmt.Errorf("malformed cgroup line %q", line)
		}
		if id == "0" && ctrls == "" {
			v2 = path
			continue
		}
		if slices.Contains(strings.Split(ctrls, ","), "cpuacct") {
			v1 = path
		}
	}
	return v1, v2, nil
}
