package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podvisor/podvisor/test/loopfs"
	"github.com/podvisor/podvisor/test/testenv"
)

// flashNamespace is the flash phase's containerd namespace.
const flashNamespace = "bench-flash"

// flashSettle is how long after the pods are Ready the flash phase
// waits before its window opens: DESIGN's invariant 10 allows the first
// minute's writes (records, events and status of pods just started).
const flashSettle = time.Minute

// flashPhase is what the flash phase measured: podvisor's writes to disk
// with pods running and nothing changing.
type flashPhase struct {
	Pods       int     `json:"pods"`
	SettleSec  float64 `json:"settle_s"`
	WindowSec  float64 `json:"window_s"`
	RelistSec  float64 `json:"relist_period_s"`
	Filesystem string  `json:"state_fs"`
	// FirstMinute is podvisor's I/O from the pods Ready to the window's
	// opening, Window over the window; PerHour extrapolates Window.
	FirstMinute ioDelta `json:"first_minute"`
	Window      ioDelta `json:"window"`
	PerHour     ioDelta `json:"per_hour"`
	// StateChanged names what under --state-dir changed in the window.
	StateChanged []string `json:"state_changed,omitempty"`
	// Rest is podvisor's CPU, memory and wake-ups over the window.
	Rest *restUse `json:"rest,omitempty"`
}

// ioDelta is a difference of /proc/<pid>/io counters.
type ioDelta struct {
	WriteBytes int64 `json:"write_bytes"` // towards a block device
	WChar      int64 `json:"wchar"`       // written by any write call (sockets and pipes too)
	SyscW      int64 `json:"syscw"`
}

func (d ioDelta) scale(f float64) ioDelta {
	return ioDelta{int64(float64(d.WriteBytes) * f), int64(float64(d.WChar) * f), int64(float64(d.SyscW) * f)}
}

// runFlash is the flash phase: a podvisor whose --state-dir is a
// loop-mounted ext4 (so that write_bytes counts what reaches a disk) runs
// n pods with its default periods; once they are Ready and flashSettle
// has passed, its write_bytes and the state dir are compared over the
// window. Only podvisor's process is measured: its log goes to a pipe the
// benchmark drains (as journald would), and container output is written
// by the log drivers the shims start.
func runFlash(ctx context.Context, o options, env *testenv.Env, dir, bin string) (_ *flashPhase, err error) {
	pv := &pvCase{env: env, bin: bin, dir: filepath.Join(dir, "flash"), logLevel: "info", logPath: o.podvisorLog, ns: flashNamespace, pipeLog: true}
	stateDir := filepath.Join(pv.dir, "state")
	img := filepath.Join(pv.dir, "state.img")
	if err := loopfs.MountExt4(img, stateDir, 256); err != nil {
		return nil, err
	}
	defer func() {
		if uerr := loopfs.UnmountExt4(img, stateDir); uerr != nil {
			err = errors.Join(err, uerr)
		}
		removeNamespaceDirs(flashNamespace)
	}()
	defer func() {
		if serr := pv.stop(ctx); serr != nil {
			err = errors.Join(err, serr)
		}
		if err != nil {
			logf("podvisor log (%s):\n%s", pv.logFile(), testenv.Tail(pv.logFile(), 30))
		}
	}()
	if err := pv.start(ctx); err != nil {
		return nil, err
	}
	n := o.flashPods
	if err := pv.writePods("flash", n); err != nil {
		return nil, err
	}
	if err := pv.waitRunningFor(ctx, n, startTimeout(n)); err != nil {
		return nil, fmt.Errorf("flash: %w\n%s", err, pv.describe(ctx))
	}
	pid := pv.cmd.Process.Pid
	ph := &flashPhase{Pods: n, SettleSec: flashSettle.Seconds(), WindowSec: o.flash.Seconds(), RelistSec: 10, Filesystem: "ext4 (loop)"}
	io0, err := procIO(pid)
	if err != nil {
		return nil, err
	}
	logf("flash: %d pods ready; settling for %v, then measuring podvisor's writes for %v", n, flashSettle, o.flash)
	if err := sleepCtx(ctx, flashSettle); err != nil {
		return nil, err
	}
	io1, err := procIO(pid)
	if err != nil {
		return nil, err
	}
	before, err := scanState(stateDir)
	if err != nil {
		return nil, err
	}
	rest0, err := sampleRest(pid)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	if err := sleepCtx(ctx, o.flash); err != nil {
		return nil, err
	}
	if err := pv.alive(); err != nil {
		return nil, err
	}
	io2, err := procIO(pid)
	if err != nil {
		return nil, err
	}
	rest1, err := sampleRest(pid)
	if err != nil {
		return nil, err
	}
	rest, err := restBetween(rest0, rest1, n)
	if err != nil {
		return nil, err
	}
	ph.Rest = &rest
	window := time.Since(t1)
	after, err := scanState(stateDir)
	if err != nil {
		return nil, err
	}
	if err := pv.waitRunningFor(ctx, n, 10*time.Second); err != nil {
		return nil, fmt.Errorf("flash: pods changed during the window: %w", err)
	}
	ph.WindowSec = window.Seconds()
	ph.FirstMinute, ph.Window = io1.sub(io0), io2.sub(io1)
	ph.PerHour = ph.Window.scale(float64(time.Hour) / float64(window))
	ph.StateChanged = diffState(before, after)
	return ph, nil
}

// procCounters is /proc/<pid>/io.
type procCounters map[string]int64

func (a procCounters) sub(b procCounters) ioDelta {
	return ioDelta{a["write_bytes"] - b["write_bytes"], a["wchar"] - b["wchar"], a["syscw"] - b["syscw"]}
}

func procIO(pid int) (procCounters, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return nil, fmt.Errorf("podvisor's io counters: %w", err)
	}
	out := procCounters{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// stateEntry is what scanState keeps of a file.
type stateEntry struct {
	size  int64
	mtime time.Time
	ino   uint64
}

// scanState returns the entries under dir on its file system (a pod's
// tmpfs Secret volume is not the state disk).
func scanState(dir string) (map[string]stateEntry, error) {
	var root syscall.Stat_t
	if err := syscall.Stat(dir, &root); err != nil {
		return nil, err
	}
	out := map[string]stateEntry{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != root.Dev {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		out[p] = stateEntry{st.Size, time.Unix(st.Mtim.Unix()), st.Ino}
		return nil
	})
	return out, err
}

func diffState(before, after map[string]stateEntry) []string {
	var out []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			out = append(out, "removed "+p)
		} else if a != b {
			out = append(out, fmt.Sprintf("changed %s (%d→%d bytes)", p, b.size, a.size))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "added "+p)
		}
	}
	slices.Sort(out)
	return out
}

func (r *report) printFlash(w io.Writer) {
	ph := r.Flash
	fmt.Fprintf(w, "\n### Writes at rest: %d pods running, nothing changing (state dir on %s, relist every %.0f s)\n\n", ph.Pods, ph.Filesystem, ph.RelistSec)
	fmt.Fprintf(w, "podvisor's own process (/proc/<pid>/io; its log to a pipe, container output is the log drivers'):\n\n")
	fmt.Fprintln(w, "| span | write_bytes | wchar (any fd) | write calls |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	fmt.Fprintf(w, "| first %.0f s after Ready | %d | %d | %d |\n", ph.SettleSec, ph.FirstMinute.WriteBytes, ph.FirstMinute.WChar, ph.FirstMinute.SyscW)
	fmt.Fprintf(w, "| then %.0f s window | %d | %d | %d |\n", ph.WindowSec, ph.Window.WriteBytes, ph.Window.WChar, ph.Window.SyscW)
	fmt.Fprintf(w, "| per idle hour (window × %.1f) | %d | %d | %d |\n", 3600/ph.WindowSec, ph.PerHour.WriteBytes, ph.PerHour.WChar, ph.PerHour.SyscW)
	fmt.Fprintf(w, "\nBytes written to the state disk per idle hour: %d — goal 0 after the first minute %s\n", ph.PerHour.WriteBytes, passMark(ph.PerHour.WriteBytes == 0 && len(ph.StateChanged) == 0))
	if len(ph.StateChanged) > 0 {
		fmt.Fprintf(w, "\nChanged under --state-dir during the window:\n")
		for _, c := range ph.StateChanged {
			fmt.Fprintf(w, "- %s\n", c)
		}
	}
}
