package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Issue 19's goals for podvisor at rest.
const (
	targetRestRSSMiB     = 25.0 // 30 pods at rest
	targetRestCPU        = 0.1  // 30 pods, no apiserver, % of one core
	targetRestCPUMirror  = 0.2  // 30 pods with --kubeconfig, lease included
	targetRestCPUMany    = 0.3  // 110 pods
	restManyPods         = 100  // from here on a rest row is held to targetRestCPUMany
	kubeletExecMSPerRun  = 2.6  // the figure for kubelet, not measured
	podvisorExecMSBefore = 5.6  // the figure for podvisor before it
	// httpGetMSPerRunBefore is the README's figure at 10ef2cf, measured by
	// this benchmark on the same machine.
	httpGetMSPerRunBefore = 1.05
)

// threadCounters are one thread's scheduler counters.
type threadCounters struct {
	runNS  uint64 // time on a CPU (schedstat field 1)
	slices uint64 // timeslices run (schedstat field 3): each is a wake-up
	vcsw   uint64 // voluntary context switches: the thread blocked
}

// restSample is one look at a process for the at-rest figures.
type restSample struct {
	at      time.Time
	threads map[int]threadCounters
	// ticks is utime+stime of the whole process (exited threads included).
	ticks uint64
	// Memory from smaps_rollup: resident, of which anonymous; file is the
	// rest (the binary's and libraries' pages, shmem).
	rssKiB, anonKiB, pssKiB int64
}

// restUse is what a process did between two samples, and its memory at
// the second.
type restUse struct {
	Pods      int     `json:"pods"`
	WindowSec float64 `json:"window_s"`
	RSSMiB    float64 `json:"rss_mib"`
	AnonMiB   float64 `json:"anon_mib"`
	FileMiB   float64 `json:"file_mib"`
	PSSMiB    float64 `json:"pss_mib"`
	// CPUPercent is the threads' time on a CPU (schedstat, ns) over the
	// window, % of one core; TickCPUPercent the same from utime+stime
	// (10 ms ticks, but counting threads that exited meanwhile).
	CPUPercent     float64 `json:"cpu_percent"`
	CPUMS          float64 `json:"cpu_ms"`
	TickCPUPercent float64 `json:"tick_cpu_percent"`
	// WakeupsPerSec is the timeslices the threads ran per second, VCSWPerSec
	// their voluntary context switches (blocking) per second.
	WakeupsPerSec float64 `json:"wakeups_per_s"`
	VCSWPerSec    float64 `json:"voluntary_switches_per_s"`
	Threads       int     `json:"threads"`
}

// sampleRest reads pid's threads' schedstat and status, its stat and its
// smaps_rollup.
func sampleRest(pid int) (restSample, error) {
	s := restSample{at: time.Now(), threads: map[int]threadCounters{}}
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return s, err
	}
	if s.ticks, _, err = parseStatTicks(stat); err != nil {
		return s, fmt.Errorf("pid %d: %w", pid, err)
	}
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return s, err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		ss, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		st, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "status"))
		if err != nil {
			continue
		}
		var c threadCounters
		if c.runNS, c.slices, err = parseSchedstat(ss); err != nil {
			return s, fmt.Errorf("pid %d thread %d: %w", pid, tid, err)
		}
		c.vcsw = uint64(max(statusField(st, "voluntary_ctxt_switches:"), 0))
		s.threads[tid] = c
	}
	roll, err := os.ReadFile(filepath.Join(dir, "smaps_rollup"))
	if err != nil {
		return s, err
	}
	s.rssKiB, s.anonKiB, s.pssKiB = parseSmapsRollup(roll)
	return s, nil
}

// parseSchedstat returns the time on a CPU (ns) and the timeslices run
// from /proc/<pid>/task/<tid>/schedstat ("run_ns wait_ns slices").
func parseSchedstat(b []byte) (runNS, slices uint64, err error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, 0, fmt.Errorf("schedstat %q: want 3 fields", strings.TrimSpace(string(b)))
	}
	if runNS, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("schedstat: %w", err)
	}
	if slices, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("schedstat: %w", err)
	}
	return runNS, slices, nil
}

// parseSmapsRollup returns Rss, Anonymous and Pss (kB) of a
// /proc/<pid>/smaps_rollup.
func parseSmapsRollup(b []byte) (rss, anon, pss int64) {
	return kibField(b, "Rss:"), kibField(b, "Anonymous:"), kibField(b, "Pss:")
}

// statusField is the number after name in /proc/<pid>/status ("name\t12"),
// -1 if absent.
func statusField(b []byte, name string) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// restBetween is what the process did from a to b: threads present at b
// count from their value at a, or from zero when they started in between
// (a thread that exited in between is lost to the schedstat figures, not
// to TickCPUPercent).
func restBetween(a, b restSample, pods int) (restUse, error) {
	sec := b.at.Sub(a.at).Seconds()
	if sec <= 0 {
		return restUse{}, errors.New("at-rest window: samples out of order")
	}
	u := restUse{
		Pods:      pods,
		WindowSec: sec,
		RSSMiB:    float64(b.rssKiB) / 1024,
		AnonMiB:   float64(b.anonKiB) / 1024,
		FileMiB:   float64(b.rssKiB-b.anonKiB) / 1024,
		PSSMiB:    float64(b.pssKiB) / 1024,
		Threads:   len(b.threads),
	}
	var runNS, slices, vcsw uint64
	for tid, c := range b.threads {
		p := a.threads[tid] // zero for a new thread
		if c.runNS < p.runNS || c.slices < p.slices || c.vcsw < p.vcsw {
			p = threadCounters{} // a reused tid: a new thread
		}
		runNS += c.runNS - p.runNS
		slices += c.slices - p.slices
		vcsw += c.vcsw - p.vcsw
	}
	u.CPUMS = float64(runNS) / 1e6
	u.CPUPercent = u.CPUMS / 10 / sec
	if b.ticks >= a.ticks {
		u.TickCPUPercent = float64(b.ticks-a.ticks) / clockTicks / sec * 100
	}
	u.WakeupsPerSec = float64(slices) / sec
	u.VCSWPerSec = float64(vcsw) / sec
	return u, nil
}

// restTargets are the goals a row of the at-rest table is held to: the
// RSS one (0: none) and the CPU one.
func restTargets(pods int, kubeconfig bool) (rssMiB, cpu float64) {
	switch {
	case pods >= restManyPods:
		return 0, targetRestCPUMany
	case kubeconfig:
		return targetRestRSSMiB, targetRestCPUMirror
	default:
		return targetRestRSSMiB, targetRestCPU
	}
}

// restRow is one row of the at-rest table.
type restRow struct {
	what       string
	kubeconfig bool
	use        *restUse
}

// restRows are the at-rest measurements this run made.
func (r *report) restRows() []restRow {
	var rows []restRow
	if fp := r.Footprint; fp != nil && fp.Rest != nil {
		rows = append(rows, restRow{what: "start phase, right after its largest run", use: fp.Rest})
	}
	if r.Flash != nil && r.Flash.Rest != nil {
		rows = append(rows, restRow{what: "no apiserver (flash phase's window)", use: r.Flash.Rest})
	}
	if r.Requests != nil && r.Requests.Rest != nil {
		rows = append(rows, restRow{what: "--kubeconfig, live apiserver, lease renewed (requests phase's window)", kubeconfig: true, use: r.Requests.Rest})
	}
	return rows
}

func (r *report) printRest(w io.Writer) {
	rows := r.restRows()
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### podvisor at rest: pods running, nothing changing\n\n")
	fmt.Fprintf(w, "%d CPUs; host load average (1 min) %.2f before the measured phases, %.2f after (podvisor's own CPU time at rest is its own work: load lengthens waits, not this).\n\n", r.CPUs, r.LoadStart, r.LoadEnd)
	fmt.Fprintln(w, "| podvisor | pods | window | RSS (anon + file) | CPU, % of a core | target | per pod: RSS, CPU | wake-ups/s | voluntary switches/s | threads |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
	for _, row := range rows {
		u := row.use
		rssT, cpuT := restTargets(u.Pods, row.kubeconfig)
		var target []string
		if rssT > 0 {
			target = append(target, fmt.Sprintf("RSS ≤ %.0f MiB %s", rssT, passMark(u.RSSMiB <= rssT)))
		}
		target = append(target, fmt.Sprintf("CPU ≤ %.1f%% %s", cpuT, passMark(u.CPUPercent <= cpuT)))
		perRSS, perCPU := 0.0, 0.0
		if u.Pods > 0 {
			perRSS, perCPU = u.RSSMiB*1024/float64(u.Pods), u.CPUPercent/float64(u.Pods)
		}
		fmt.Fprintf(w, "| %s | %d | %.0f s | %.1f MiB (%.1f + %.1f) | %.3f%% (ticks: %.2f%%) | %s | %.0f KiB, %.4f%% | %.1f | %.1f | %d |\n",
			row.what, u.Pods, u.WindowSec, u.RSSMiB, u.AnonMiB, u.FileMiB, u.CPUPercent, u.TickCPUPercent,
			strings.Join(target, ", "), perRSS, perCPU, u.WakeupsPerSec, u.VCSWPerSec, u.Threads)
	}
	fmt.Fprintln(w, "\nRSS and its split from /proc/<pid>/smaps_rollup (file: the binary's pages and other mapped files); CPU from the threads' schedstat run time (ns), with utime+stime in 10 ms ticks beside it; wake-ups: timeslices the threads ran (schedstat), voluntary switches: the times they blocked (status), per second.")
}
