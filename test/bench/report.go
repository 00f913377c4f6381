package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Issue 19's goals for starts, as ratios to the floor measured in the
// same run.
const (
	targetOneFloor = 1.15 // 1 pod: first start ≤ 1.15 × (floor + CNI ADD)
	targetMany     = 1.0  // 30 pods: last start ≤ the baseline's
	targetLarge    = 1.2  // 110 pods: last start ≤ 1.2 × the baseline's
	largePods      = 100  // from here on targetLarge
	targetRestart  = 1.1  // first restart after kill -9 ≤ 1.1 × the floor's new container
)

// runResult is one measured run of one case.
type runResult struct {
	Case     string    `json:"case"`
	N        int       `json:"n"`
	Tag      string    `json:"tag"`
	StartsMS []float64 `json:"starts_ms"` // each pod's first instruction after t0, sorted
	First    float64   `json:"first_ms"`
	Last     float64   `json:"last_ms"`
	Median   float64   `json:"median_ms"`
	// Phases holds, per milestone, the offsets from t0 of every container
	// of the run, sorted.
	Phases map[string][]float64 `json:"phases_ms,omitempty"`
	T0     time.Time            `json:"t0"`
	// NetMS is, per pod, how long its network namespace and CNI ADD took
	// (baseline runs only), sorted.
	NetMS []float64 `json:"net_ms,omitempty"`
	// CPU is what each part of the start used from t0 until the last
	// first instruction.
	CPU cpuSplit `json:"cpu"`
}

func newRunResult(name, tag string, n int, t0 time.Time, lat []time.Duration) *runResult {
	r := &runResult{Case: name, N: n, Tag: tag, T0: t0}
	for _, d := range lat {
		r.StartsMS = append(r.StartsMS, float64(d)/float64(time.Millisecond))
	}
	slices.Sort(r.StartsMS)
	r.First, r.Last, r.Median = r.StartsMS[0], r.StartsMS[len(r.StartsMS)-1], median(r.StartsMS)
	return r
}

// phaseStat summarises one milestone over the runs of a case.
type phaseStat struct {
	Median float64 `json:"median_ms"` // median over runs of the run's median
	Max    float64 `json:"max_ms"`    // median over runs of the run's latest
}

// summary is one case at one N over its runs (medians of the runs).
type summary struct {
	Case     string               `json:"case"`
	N        int                  `json:"n"`
	Runs     int                  `json:"runs"`
	FirstMS  float64              `json:"first_ms"`
	LastMS   float64              `json:"last_ms"`
	MedianMS float64              `json:"median_ms"`
	Phases   map[string]phaseStat `json:"phases,omitempty"`
	// NetMS is the median over runs of the run's median network namespace
	// + CNI ADD (baseline rows only).
	NetMS float64 `json:"net_ms,omitempty"`
	// CPU is each part's median over runs.
	CPU cpuSplit `json:"cpu"`
	// Ratios to the baseline at the same N (podvisor rows only).
	RatioFirst float64 `json:"ratio_first,omitempty"`
	RatioLast  float64 `json:"ratio_last,omitempty"`
}

// floorRow is one of issue 19's start goals: podvisor against the floor
// measured in the same run.
type floorRow struct {
	What       string  `json:"what"`
	PodvisorMS float64 `json:"podvisor_ms"`
	FloorMS    float64 `json:"floor_ms"`
	Floor      string  `json:"floor"` // what FloorMS is
	Ratio      float64 `json:"ratio"`
	Target     float64 `json:"target"`
	Pass       bool    `json:"pass"`
}

// floorRows compares podvisor's summaries and restarts (ms, one per run)
// with the floor's and the baseline's: 1 pod against the floor plus the
// baseline's CNI ADD, N pods against the baseline, the first restart
// after kill -9 against the floor's new container; then, if they were
// measured (-ctr), the same against ctr-floor and ctr.
func floorRows(sums []summary, restarts []float64) []floorRow {
	find := func(name string, n int) *summary {
		for i := range sums {
			if sums[i].Case == name && sums[i].N == n {
				return &sums[i]
			}
		}
		return nil
	}
	row := func(what string, pv, floor float64, floorWhat string, target float64) floorRow {
		r := floorRow{What: what, PodvisorMS: pv, FloorMS: floor, Floor: floorWhat, Target: target}
		if floor > 0 {
			r.Ratio = pv / floor
			r.Pass = r.Ratio <= target
		}
		return r
	}
	var sizes []int
	for _, s := range sums {
		if s.Case == "podvisor" {
			sizes = append(sizes, s.N)
		}
	}
	var out []floorRow
	// Against the Go client in this process, then (-ctr) against a `ctr
	// run -d` process per pod, the floor issue 19's own table names.
	for _, c := range []struct {
		floor, base                       string // the cases
		oneFloor, manyFloor, restartFloor string // what the rows' floor is
	}{
		{"floor", "baseline", "floor %.1f + CNI ADD %.1f", "baseline: netns + CNI ADD + container", "floor: a new container"},
		{"ctr-floor", "ctr", "`ctr run -d` %.1f + CNI ADD %.1f", "ctr: netns + CNI ADD + `ctr run -d`", "`ctr run -d`: a new container"},
	} {
		for _, n := range sizes {
			pv, base, fl := find("podvisor", n), find(c.base, n), find(c.floor, n)
			switch {
			case n == 1 && fl != nil && base != nil:
				out = append(out, row("1 pod, its start", pv.FirstMS, fl.FirstMS+base.NetMS,
					fmt.Sprintf(c.oneFloor, fl.FirstMS, base.NetMS), targetOneFloor))
			case n > 1 && base != nil:
				target := targetMany
				if n >= largePods {
					target = targetLarge
				}
				out = append(out, row(fmt.Sprintf("%d pods at once, the last start", n), pv.LastMS, base.LastMS, c.manyFloor, target))
			}
		}
		if fl := find(c.floor, 1); fl != nil && len(restarts) > 0 {
			out = append(out, row(fmt.Sprintf("first restart after kill -9 (median of %d)", len(restarts)), median(restarts), fl.FirstMS, c.restartFloor, targetRestart))
		}
	}
	return out
}

// footprint is podvisor's footprint with pods running.
type footprint struct {
	Pods            int     `json:"pods"`
	WindowSec       float64 `json:"window_s"`
	Podvisor        usage   `json:"podvisor"`
	PodvisorPeakMiB float64 `json:"podvisor_peak_rss_mib"`
	LogDrivers      usage   `json:"log_drivers"`
	Shims           usage   `json:"shims"`
	Containerd      usage   `json:"containerd"`
	// Rest is podvisor's own at-rest figures over the same window.
	Rest *restUse `json:"rest,omitempty"`
}

// report is everything the benchmark prints.
type report struct {
	ContainerdVersion string    `json:"containerd_version"`
	Containerd        string    `json:"containerd"`
	CPUs              int       `json:"cpus"`
	Kernel            string    `json:"kernel"`
	Started           time.Time `json:"started"`
	BaselineLogDriver bool      `json:"baseline_log_driver,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg's 1-minute average when the
	// measured runs begin and end: other work on the host skews results.
	LoadStart float64   `json:"load_start"`
	LoadEnd   float64   `json:"load_end"`
	Summaries []summary `json:"summaries"`
	// RestartsMS are the first restarts after kill -9 of a podvisor
	// pod's container (kill → the new container's first instruction).
	RestartsMS []float64 `json:"restarts_ms,omitempty"`
	// Floor compares podvisor with the floor (summarize fills it).
	Floor     []floorRow `json:"floor,omitempty"`
	Footprint *footprint `json:"footprint,omitempty"`
	// BaselineShims is the memory of the baseline's shims with the same
	// number of pods (no log driver, no CPU window).
	BaselineShims *usage       `json:"baseline_shims,omitempty"`
	Runs          []*runResult `json:"runs,omitempty"`
	// Probes is the probe-cost phase (-probes).
	Probes *probePhase `json:"probes,omitempty"`
	// Mirror is the mirror phase (-mirror).
	Mirror *mirrorPhase `json:"mirror,omitempty"`
	// Flash is the flash phase (-flash).
	Flash *flashPhase `json:"flash,omitempty"`
	// Requests is the requests phase (-requests).
	Requests *requestsPhase `json:"requests,omitempty"`
}

func (r *report) summarize(sizes []int) {
	for _, n := range sizes {
		var base *summary
		for _, name := range []string{"floor", "baseline", "ctr-floor", "ctr", "podvisor"} {
			s := summary{Case: name, N: n, Phases: map[string]phaseStat{}}
			var first, last, med, net []float64
			var cpu []cpuSplit
			phaseMed, phaseMax := map[string][]float64{}, map[string][]float64{}
			for _, rr := range r.Runs {
				if rr.Case != name || rr.N != n {
					continue
				}
				s.Runs++
				first, last, med = append(first, rr.First), append(last, rr.Last), append(med, rr.Median)
				cpu = append(cpu, rr.CPU)
				if len(rr.NetMS) > 0 {
					net = append(net, median(rr.NetMS))
				}
				ph := map[string][]float64{msFirst: rr.StartsMS}
				for k, v := range rr.Phases {
					ph[k] = v
				}
				for k, v := range ph {
					if len(v) == 0 {
						continue
					}
					phaseMed[k] = append(phaseMed[k], median(v))
					phaseMax[k] = append(phaseMax[k], v[len(v)-1])
				}
			}
			if s.Runs == 0 {
				continue
			}
			s.FirstMS, s.LastMS, s.MedianMS = median(first), median(last), median(med)
			s.NetMS, s.CPU = median(net), medianCPU(cpu)
			for k := range phaseMed {
				s.Phases[k] = phaseStat{Median: median(phaseMed[k]), Max: median(phaseMax[k])}
			}
			if name == "baseline" {
				base = &s
			} else if name == "podvisor" && base != nil {
				s.RatioFirst, s.RatioLast = s.FirstMS/base.FirstMS, s.LastMS/base.LastMS
			}
			r.Summaries = append(r.Summaries, s)
		}
	}
	r.Floor = floorRows(r.Summaries, r.RestartsMS)
}

func (r *report) print(w io.Writer) {
	if len(r.Summaries) > 0 {
		r.printStart(w)
	}
	if r.Probes != nil {
		r.printProbes(w)
	}
	if r.Mirror != nil {
		r.printMirror(w)
	}
	if r.Flash != nil {
		r.printFlash(w)
	}
	if r.Requests != nil {
		r.Requests.print(w)
	}
	r.printRest(w)
	fmt.Fprintln(w)
}

func (r *report) printStart(w io.Writer) {
	fmt.Fprintf(w, "\n### Pod start: manifest rename → container's first instruction\n\n")
	fmt.Fprintf(w, "containerd %s, %d CPUs, kernel %s; medians over runs; ratio = podvisor / baseline.\n", r.ContainerdVersion, r.CPUs, r.Kernel)
	fmt.Fprintf(w, "Host load average (1 min) before the measured runs: %.2f", r.LoadStart)
	if r.LoadStart > float64(r.CPUs)/2 {
		fmt.Fprintf(w, " — other work was running; expect noise")
	}
	fmt.Fprintln(w, ".")
	if r.BaselineLogDriver {
		fmt.Fprintf(w, "Baseline tasks log through podvisor's log driver (-baseline-log-driver).\n")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "floor: a new container in an existing network namespace, no CNI; baseline: netns + CNI ADD + container, per pod, straight through containerd (the Go client, in the benchmark's process); ctr (with -ctr): the baseline's netns + CNI ADD, then a `ctr run -d` process per pod.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | N | runs | first start ms | last start ms | median pod ms | netns + CNI ADD ms | ratio first | ratio last | podvisor CPU ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.Summaries {
		net, rf, rl, cpu := "", "", "", ""
		if s.NetMS > 0 {
			net = fmt.Sprintf("%.1f", s.NetMS)
		}
		if s.Case == "podvisor" && s.RatioFirst > 0 {
			rf, rl = fmt.Sprintf("%.2f×", s.RatioFirst), fmt.Sprintf("%.2f×", s.RatioLast)
			cpu = fmt.Sprintf("%.0f", s.CPU.Manager)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | %.1f | %.1f | %s | %s | %s | %s |\n", s.Case, s.N, s.Runs, s.FirstMS, s.LastMS, s.MedianMS, net, rf, rl, cpu)
	}
	if len(r.Floor) > 0 {
		fmt.Fprintf(w, "\n### Against the floor (issue 19's goals), same run\n\n")
		fmt.Fprintln(w, "| measurement | podvisor ms | floor ms | floor | ratio | target |")
		fmt.Fprintln(w, "|---|---:|---:|---|---:|---|")
		for _, f := range r.Floor {
			fmt.Fprintf(w, "| %s | %.1f | %.1f | %s | %.2f× | ≤ %.2f× %s |\n", f.What, f.PodvisorMS, f.FloorMS, f.Floor, f.Ratio, f.Target, passMark(f.Pass))
		}
		if len(r.RestartsMS) > 0 {
			var v []string
			for _, ms := range r.RestartsMS {
				v = append(v, fmt.Sprintf("%.1f", ms))
			}
			fmt.Fprintf(w, "\nRestarts (kill -9 of the container's process → the new container's first instruction, a fresh pod each, restartPolicy Always): %s ms.\n", strings.Join(v, ", "))
		}
	}

	fmt.Fprintf(w, "\n### Where the time goes (ms after t0, from containerd events: median pod / last pod)\n\n")
	fmt.Fprintf(w, "| case | N | %s |\n", strings.Join(milestones, " | "))
	fmt.Fprintf(w, "|---|---:|%s\n", strings.Repeat("---:|", len(milestones)))
	for _, s := range r.Summaries {
		var cells []string
		for _, m := range milestones {
			p, ok := s.Phases[m]
			if !ok {
				cells = append(cells, "–")
				continue
			}
			if s.N == 1 {
				cells = append(cells, fmt.Sprintf("%.1f", p.Median))
			} else {
				cells = append(cells, fmt.Sprintf("%.1f / %.1f", p.Median, p.Max))
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s |\n", s.Case, s.N, strings.Join(cells, " | "))
	}

	fmt.Fprintf(w, "\n### CPU by process, t0 → the last first instruction (ms, medians over runs)\n\n")
	fmt.Fprintln(w, "manager: podvisor, or this benchmark for the baseline and the floor (its polling included); its children: the processes it reaped, the CNI plugins; containerd with the processes it reaped; the case's shims with theirs (runc create and start); the containers' own processes (runc's init, until it execs the command).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | N | manager | its children | containerd | shims + runc | containers | total |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.Summaries {
		c := s.CPU
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", s.Case, s.N, c.Manager, c.ManagerChildren, c.Containerd, c.Shims, c.Containers, c.Total())
	}

	if fp := r.Footprint; fp != nil {
		fmt.Fprintf(w, "\n### Footprint with %d podvisor pods running (CPU over a %.0f s idle window, %% of one core)\n\n", fp.Pods, fp.WindowSec)
		fmt.Fprintf(w, "- podvisor: RSS %.1f MiB (peak %.1f MiB), CPU %.2f%% (the at-rest table below holds it to issue 19's goals)\n",
			fp.Podvisor.RSSMiB, fp.PodvisorPeakMiB, fp.Podvisor.CPUPercent)
		fmt.Fprintf(w, "- podvisor log drivers: %s\n", fp.LogDrivers.line())
		fmt.Fprintf(w, "- shims (%s): %s\n", pvNamespace, fp.Shims.line())
		fmt.Fprintf(w, "- containerd: %s\n", fp.Containerd.line())
		if b := r.BaselineShims; b != nil {
			fmt.Fprintf(w, "- baseline shims (%s, %d pods, no log driver): %s\n", baseNamespace, b.Pods, b.line())
		}
	}
}

func (r *report) printProbes(w io.Writer) {
	ph := r.Probes
	if len(ph.Configs) == 0 {
		return
	}
	c0 := ph.Configs[0]
	fmt.Fprintf(w, "\n### Probe cost: %d probetarget pods, each probe every %v (CPU over a %.0f s window, %% of one core)\n\n", c0.Pods, probePeriod, c0.WindowSec)
	if len(r.Summaries) == 0 {
		fmt.Fprintf(w, "containerd %s, %d CPUs, kernel %s; host load average (1 min) %.2f before, %.2f after", r.ContainerdVersion, r.CPUs, r.Kernel, r.LoadStart, r.LoadEnd)
		if r.LoadStart > float64(r.CPUs)/2 || r.LoadEnd > float64(r.CPUs)/2 {
			fmt.Fprintf(w, " — other work was running; expect noise")
		}
		fmt.Fprint(w, ".\n\n")
	}
	fmt.Fprintln(w, "| probes | runs/s | podvisor CPU | podvisor ms/run | podvisor RSS | goroutines | fds | restarts | shims CPU (+ reaped) | containerd CPU | runtime ms/run | log drivers CPU |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range ph.Configs {
		runs, per, rt := "–", "–", "–"
		if c.Runs > 0 || c.Expected > 0 {
			runs = fmt.Sprintf("%.1f (of %.0f)", float64(c.Runs)/c.WindowSec, c.Expected/c.WindowSec)
			per, rt = fmt.Sprintf("%.3f", c.MSPerRun), fmt.Sprintf("%.2f", c.RuntimeMSPerRun)
		}
		fmt.Fprintf(w, "| %s | %s | %.2f%% | %s | %.1f MiB | %d (%d after) | %d (%d after) | %d | %.2f%% (+ %.2f%%) | %.2f%% | %s | %.2f%% |\n",
			c.Config, runs, c.Podvisor.CPUPercent, per, c.Podvisor.RSSMiB, c.Goroutines, c.GoroutinesAfter, c.FDs, c.FDsAfter, c.Restarts,
			c.Shims.CPUPercent, c.Shims.ChildCPUPercent, c.Containerd.CPUPercent, rt, c.LogDrivers.CPUPercent)
	}
	for _, c := range ph.Configs {
		switch {
		case c.Config == "exec" && c.Runs > 0:
			fmt.Fprintf(w, "\nExec probe: podvisor's own CPU %.2f ms per run — goal ≤ kubelet's %.1f ms (the issue's figure, not measured; podvisor's was %.1f ms) %s\n",
				c.MSPerRun, kubeletExecMSPerRun, podvisorExecMSBefore, passMark(c.MSPerRun <= kubeletExecMSPerRun))
		case c.Config == "httpGet" && c.Runs > 0:
			fmt.Fprintf(w, "\nhttpGet probe: podvisor's own CPU %.2f ms per run — goal no dearer than before (%.2f ms at 10ef2cf) %s\n",
				c.MSPerRun, httpGetMSPerRunBefore, passMark(c.MSPerRun <= httpGetMSPerRunBefore))
		}
	}
	fmt.Fprintf(w, "\nruns: probe runs seen per second (httpGet: the target's request log; exec: containerd's exec-started events) and those the periods ask for. ms/run: CPU above the run without probes, per probe run; runtime = containerd + shims + what the shims reaped (runc, the probe's command). goroutines and fds: podvisor's at the window's end, and after the pods were removed (before the first pods: %d goroutines, %d fds).\n", ph.GoroutinesBefore, ph.FDsBefore)
}

func (u usage) line() string {
	s := fmt.Sprintf("%d processes, RSS %.1f MiB, PSS %.1f MiB", u.Procs, u.RSSMiB, u.PSSMiB)
	if u.CPUPercent >= 0 {
		s += fmt.Sprintf(", CPU %.2f%%", u.CPUPercent)
	}
	return s
}

func passMark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// median of a sorted or unsorted slice (not modified); 0 when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func (r *report) printMirror(w io.Writer) {
	m := r.Mirror
	if len(r.Summaries) == 0 && r.Probes == nil {
		fmt.Fprintf(w, "\ncontainerd %s, %d CPUs, kernel %s; host load average (1 min) %.2f before, %.2f after", r.ContainerdVersion, r.CPUs, r.Kernel, r.LoadStart, r.LoadEnd)
		if r.LoadStart > float64(r.CPUs)/2 || r.LoadEnd > float64(r.CPUs)/2 {
			fmt.Fprintf(w, " — other work was running; expect noise")
		}
		fmt.Fprint(w, ".\n")
	}
	if len(m.Runs) > 0 {
		fmt.Fprintf(w, "\n### Mirror: manifest renamed in → mirror pod Ready seen in the apiserver (watch), %d runs\n\n", len(m.Runs))
		fmt.Fprintf(w, "podvisor already registered (its start → node Ready in the apiserver: %.0f ms).\n\n", m.NodeReadyMS)
		fmt.Fprintln(w, "| milestone | median | runs | kubelet 1.37 (issue's figure, not measured) |")
		fmt.Fprintln(w, "|---|---:|---|---:|")
		row := func(name string, med float64, get func(mirrorRun) float64, kubelet string) {
			var runs []string
			for _, mr := range m.Runs {
				runs = append(runs, fmt.Sprintf("%.0f", get(mr)))
			}
			fmt.Fprintf(w, "| %s | %.0f ms | %s | %s |\n", name, med, strings.Join(runs, ", "), kubelet)
		}
		row("container's first instruction (local)", m.FirstMS, func(mr mirrorRun) float64 { return mr.FirstMS }, "")
		row("mirror pod created", m.CreatedMS, func(mr mirrorRun) float64 { return mr.CreatedMS }, "")
		row("mirror pod Ready", m.ReadyMS, func(mr mirrorRun) float64 { return mr.ReadyMS }, fmt.Sprintf("~%d ms", kubeletMirrorReadyMS))
	}
	if len(m.Kubeadm) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### kubeadm control plane from cold: podvisor start (no state, no image imported) → …, %d runs\n\n", len(m.Kubeadm))
	fmt.Fprintln(w, "| milestone | median | runs | kubelet 1.37 (issue's figure, not measured) |")
	fmt.Fprintln(w, "|---|---:|---|---:|")
	krow := func(name string, get func(kubeadmRun) float64, kubelet string) {
		var v []float64
		var runs []string
		for _, kr := range m.Kubeadm {
			v = append(v, get(kr))
			runs = append(runs, fmt.Sprintf("%.0f", get(kr)))
		}
		fmt.Fprintf(w, "| %s | %.0f ms | %s | %s |\n", name, median(v), strings.Join(runs, ", "), kubelet)
	}
	for i := range m.Kubeadm[0].Imports {
		krow("archive "+m.Kubeadm[0].Imports[i].File+" imported (podvisor's log)", func(kr kubeadmRun) float64 {
			if i < len(kr.Imports) {
				return kr.Imports[i].MS
			}
			return 0
		}, "")
	}
	for _, p := range kubeadmPods {
		krow(p+": task started", func(kr kubeadmRun) float64 { return kr.Pods[p].TaskStartMS }, "")
	}
	krow("apiserver's first answer (/readyz, any status)", func(kr kubeadmRun) float64 { return kr.AnsweredMS }, "")
	krow("apiserver /readyz ok", func(kr kubeadmRun) float64 { return kr.ReadyzMS }, fmt.Sprintf("~%.1f s", kubeletKubeadmReadyzMS/1000.0))
	for _, p := range kubeadmPods {
		krow(p+": Ready in podvisor's API", func(kr kubeadmRun) float64 { return kr.Pods[p].LocalReadyMS }, "")
	}
	krow("node registered (podvisor's log)", func(kr kubeadmRun) float64 { return kr.NodeRegisteredMS }, "")
	for _, p := range kubeadmPods {
		krow(p+": mirror seen", func(kr kubeadmRun) float64 { return kr.Pods[p].MirrorSeenMS }, "")
	}
	for _, p := range kubeadmPods {
		krow(p+": mirror Running 1/1", func(kr kubeadmRun) float64 { return kr.Pods[p].MirrorRunningMS }, "")
	}
	krow("four mirrors Running 1/1", func(kr kubeadmRun) float64 { return kr.MirrorsMS }, fmt.Sprintf("~%.0f s", kubeletKubeadmMirrorMS/1000.0))
	krow(fmt.Sprintf("floor: latest (task start + initialDelaySeconds) + %.1f s", kubeadmSlack.Seconds()), func(kr kubeadmRun) float64 { return kr.FloorMS }, "")
	krow("four mirrors Running 1/1 − floor (goal ≤ 0)", func(kr kubeadmRun) float64 { return kr.MirrorsMS - kr.FloorMS }, "")
	var within []string
	for _, kr := range m.Kubeadm {
		within = append(within, passMark(kr.FloorMS > 0 && kr.MirrorsMS <= kr.FloorMS))
	}
	var delays []string
	for _, p := range kubeadmPods {
		delays = append(delays, fmt.Sprintf("%s %.0f s", p, m.Kubeadm[0].Pods[p].ReadyDelaySec))
	}
	fmt.Fprintf(w, "\nFour mirrors Running 1/1 within the floor, per run: %s. initialDelaySeconds before a pod can be Ready (its manifest's startup, else readiness probe): %s.\n", strings.Join(within, " "), strings.Join(delays, ", "))
	var retries, refusals []string
	for _, kr := range m.Kubeadm {
		retries = append(retries, fmt.Sprint(kr.NodeRetries))
		refusals = append(refusals, fmt.Sprint(kr.MirrorRefusals))
	}
	fmt.Fprintf(w, "\nThe archives are imported one after another, in name order; a pod looks for its image once the archive naming it is imported. Per run: failed node-status tries before the node was registered (each followed by a back-off wait): %s; mirror creations the apiserver refused (each followed by a back-off): %s.\n",
		strings.Join(retries, ", "), strings.Join(refusals, ", "))
}
