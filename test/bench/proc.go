package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/procfs"
	"github.com/podvisor/podvisor/test/testenv"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// proc is one process as /proc shows it.
type proc struct {
	pid  int
	args []string
	exe  string
}

// usage is the footprint of a group of processes.
type usage struct {
	Procs  int     `json:"procs"`
	RSSMiB float64 `json:"rss_mib"` // sum of VmRSS (shared pages counted in each)
	PSSMiB float64 `json:"pss_mib"` // sum of Pss (shared pages split)
	// CPUPercent is of one core over the window; -1 when not measured.
	CPUPercent float64 `json:"cpu_percent"`
	// CPUMS is the CPU time the processes used over the window.
	CPUMS float64 `json:"cpu_ms,omitempty"`
	// ChildCPUPercent is the CPU of children the processes reaped during
	// the window (a shim's runc and exec'd commands), % of one core.
	ChildCPUPercent float64 `json:"child_cpu_percent,omitempty"`
	Pods            int     `json:"pods,omitempty"`
}

// listProcs returns every process whose command line is readable.
func listProcs() []proc {
	var out []proc
	for _, p := range procfs.List() {
		exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.PID), "exe"))
		out = append(out, proc{pid: p.PID, args: p.Args, exe: exe})
	}
	return out
}

// flagValue returns the value following name in args ("-name value" or
// "-name=value", one or two dashes).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name && i+1 < len(args) && strings.HasPrefix(args[i], "-") {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok && strings.HasPrefix(args[i], "-") {
			return v, true
		}
	}
	return "", false
}

// shimOf matches the runc v2 shims serving namespace ns for the containerd
// at address.
func shimOf(address, ns string) func(proc) bool {
	return func(p proc) bool {
		if len(p.args) == 0 || filepath.Base(p.args[0]) != "containerd-shim-runc-v2" {
			return false
		}
		a, _ := flagValue(p.args, "address")
		n, _ := flagValue(p.args, "namespace")
		return a == address && n == ns
	}
}

// containerdOf matches the environment's containerd daemon: its config
// file lies inside the environment's dir.
func containerdOf(env *testenv.Env) func(proc) bool {
	return func(p proc) bool {
		if len(p.args) == 0 || filepath.Base(p.args[0]) != filepath.Base(env.Containerd) {
			return false
		}
		cfg, ok := flagValue(p.args, "config")
		return ok && strings.HasPrefix(cfg, env.Dir+string(os.PathSeparator))
	}
}

// procStat is one sample of a process.
type procStat struct {
	rssKiB, pssKiB int64
	ticks          uint64 // utime + stime
	childTicks     uint64 // cutime + cstime: reaped children
}

// readProc samples a process; it fails once the process is gone.
func readProc(pid int) (procStat, error) {
	s, err := readTicks(pid)
	if err != nil {
		return s, err
	}
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	st, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return s, err
	}
	s.rssKiB = kibField(st, "VmRSS:")
	if roll, err := os.ReadFile(filepath.Join(dir, "smaps_rollup")); err == nil {
		s.pssKiB = kibField(roll, "Pss:")
	}
	return s, nil
}

// readTicks reads pid's CPU times (ticks and childTicks) only.
func readTicks(pid int) (procStat, error) {
	var s procStat
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return s, err
	}
	if s.ticks, s.childTicks, err = parseStatTicks(stat); err != nil {
		return s, fmt.Errorf("pid %d: %w", pid, err)
	}
	return s, nil
}

// parseStatTicks returns utime+stime and cutime+cstime (the children it
// has waited for) from the contents of /proc/<pid>/stat. The command name
// (field 2) may hold spaces and parentheses, so fields are counted after
// its last ')'.
func parseStatTicks(stat []byte) (self, children uint64, err error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime, stime, cutime and cstime are fields
	// 14 to 17 (cutime and cstime are signed in the kernel's format).
	if len(f) < 15 {
		return 0, 0, errors.New("short stat")
	}
	var v [4]uint64
	var errs []error
	for k := range v {
		n, err := strconv.ParseInt(f[11+k], 10, 64)
		errs = append(errs, err)
		v[k] = uint64(max(n, 0))
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, fmt.Errorf("stat times: %w", err)
	}
	return v[0] + v[1], v[2] + v[3], nil
}

// kibField returns the value in kB of a "Name:   123 kB" line, 0 if absent.
func kibField(b []byte, name string) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// peakRSS is a process's VmHWM in MiB.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	return float64(kibField(b, "VmHWM:")) / 1024
}

// snapshotGroup sums the memory of the processes match selects.
func snapshotGroup(match func(proc) bool) (usage, error) {
	u := usage{CPUPercent: -1}
	for _, p := range listProcs() {
		if !match(p) {
			continue
		}
		s, err := readProc(p.pid)
		if err != nil {
			continue // exited meanwhile
		}
		u.Procs++
		u.RSSMiB += float64(s.rssKiB) / 1024
		u.PSSMiB += float64(s.pssKiB) / 1024
	}
	return u, nil
}

// measureGroups samples each group's processes at the start and the end of
// window and returns their memory (at the end) and CPU over the window.
// Processes that appear or vanish in between are not counted for CPU.
func measureGroups(ctx context.Context, groups map[string]func(proc) bool, window time.Duration) (map[string]usage, error) {
	type member struct {
		group string
		first procStat
	}
	members := map[int]member{}
	for _, p := range listProcs() {
		for g, match := range groups {
			if match(p) {
				if s, err := readProc(p.pid); err == nil {
					members[p.pid] = member{group: g, first: s}
				}
				break
			}
		}
	}
	start := time.Now()
	t := time.NewTimer(window)
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, ctx.Err()
	case <-t.C:
	}
	elapsed := time.Since(start).Seconds()
	out := map[string]usage{}
	for g := range groups {
		out[g] = usage{}
	}
	ticks, childTicks := map[string]uint64{}, map[string]uint64{}
	for pid, m := range members {
		s, err := readProc(pid)
		if err != nil {
			continue
		}
		u := out[m.group]
		u.Procs++
		u.RSSMiB += float64(s.rssKiB) / 1024
		u.PSSMiB += float64(s.pssKiB) / 1024
		out[m.group] = u
		ticks[m.group] += s.ticks - m.first.ticks
		childTicks[m.group] += s.childTicks - m.first.childTicks
	}
	for g, u := range out {
		u.CPUPercent = float64(ticks[g]) / clockTicks / elapsed * 100
		u.CPUMS = float64(ticks[g]) * 1000 / clockTicks
		u.ChildCPUPercent = float64(childTicks[g]) / clockTicks / elapsed * 100
		out[g] = u
	}
	return out, nil
}
