package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podvisor/podvisor/test/testenv"
)

const (
	pvNamespace   = "bench-pv"
	baseNamespace = "bench-base"
	// floorNamespace is the floor's: new containers alone (baseCase.floor).
	floorNamespace = "bench-floor"
	// ctrNamespace and ctrFloorNamespace are the baseline's and the
	// floor's with `ctr run -d` per pod (-ctr).
	ctrNamespace      = "bench-ctr"
	ctrFloorNamespace = "bench-ctr-floor"
	// podCommand is what every measured container runs: its first
	// instruction stamps the start, then it idles.
	podCommand  = "touch /out/started; exec sleep 3600"
	startedFile = "started"
)

// options are the command-line flags.
type options struct {
	podvisor    string
	runs        int
	sizes       []int
	jsonOut     string
	idle        time.Duration
	logLevel    string
	podvisorLog string
	// baseLogDriver makes the baseline log through podvisor's log driver.
	baseLogDriver bool
	// ctr is the ctr binary of the ctr case ("": no ctr case).
	ctr string
	// start runs the start-latency phase (and the footprint); restarts is
	// its number of first restarts after kill -9 (0: none).
	start    bool
	restarts int
	// probes is the probe phase's window (0: skip it), probePods its pods.
	probes    time.Duration
	probePods int
	// mirror runs the mirror phase: mirrorRuns warm runs against an
	// apiserver, then kubeadmRuns kubeadm control planes from cold.
	mirror                  bool
	mirrorRuns, kubeadmRuns int
	mirrorLogDir            string
	// flash is the flash phase's window (0: skip it), flashPods its pods.
	flash     time.Duration
	flashPods int
	// requests is the requests phase's window (0: skip it), requestPods
	// its pods.
	requests    time.Duration
	requestPods int
}

func main() {
	var o options
	var sizes string
	flag.StringVar(&o.podvisor, "podvisor", "bin/podvisor", "podvisor binary (build it with CGO_ENABLED=0 go build -o bin/podvisor ./cmd/podvisor)")
	flag.IntVar(&o.runs, "runs", 0, "measured runs per case and size (default: 5 for N=1, 3 otherwise)")
	flag.StringVar(&sizes, "sizes", "1,30", "comma-separated numbers of pods started at once")
	flag.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.DurationVar(&o.idle, "idle", 10*time.Second, "idle window for the CPU footprint (0: skip the footprint)")
	flag.StringVar(&o.logLevel, "log-level", "info", "podvisor's --log-level")
	flag.StringVar(&o.podvisorLog, "podvisor-log", "", "keep podvisor's log in this file (default: a temp file, removed)")
	flag.BoolVar(&o.baseLogDriver, "baseline-log-driver", false, "baseline tasks log through podvisor's log driver instead of no IO (isolates that cost)")
	flag.StringVar(&o.ctr, "ctr", "", "start phase: also start the pods with this `ctr` binary's run -d, one process per pod after the baseline's netns + CNI ADD (the floor issue 19's table names; empty: not measured)")
	flag.BoolVar(&o.start, "start", true, "run the start-latency phase against the baseline and the floor (and the footprint)")
	flag.IntVar(&o.restarts, "restarts", 5, "start phase: first restarts after kill -9 of a pod's container to measure, each in a fresh pod (0: none)")
	flag.DurationVar(&o.probes, "probes", 0, "window of the probe-cost phase: podvisor's CPU with pods probed every second (0: skip the phase)")
	flag.IntVar(&o.probePods, "probe-pods", 30, "pods of the probe-cost phase")
	flag.BoolVar(&o.mirror, "mirror", false, "run the mirror phase: manifest → mirror pod Ready in an apiserver, and the kubeadm control plane from cold (needs `make controlplane`)")
	flag.IntVar(&o.mirrorRuns, "mirror-runs", 5, "measured runs of manifest → mirror Ready (0: skip them)")
	flag.IntVar(&o.kubeadmRuns, "kubeadm-runs", 3, "kubeadm control planes started from cold (0: none)")
	flag.StringVar(&o.mirrorLogDir, "mirror-log-dir", "", "keep the logs of the mirror phase's podvisors in this directory")
	flag.DurationVar(&o.flash, "flash", 0, "window of the flash phase: podvisor's writes to disk with -flash-pods pods idle, a minute after they are Ready (0: skip the phase)")
	flag.IntVar(&o.flashPods, "flash-pods", 30, "pods of the flash phase")
	flag.DurationVar(&o.requests, "requests", 0, "window of the requests phase: podvisor's requests to the apiserver with -request-pods pods at rest, from the apiserver's audit log (0: skip the phase; needs `make controlplane`)")
	flag.IntVar(&o.requestPods, "request-pods", 10, "pods of the requests phase")
	flag.Parse()
	if !o.start && o.probes <= 0 && !o.mirror && o.flash <= 0 && o.requests <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -start=false and no -probes window, -mirror, -flash or -requests: nothing to measure")
		os.Exit(2)
	}
	if o.probePods < 1 || o.flashPods < 1 || o.requestPods < 1 || o.restarts < 0 {
		fmt.Fprintln(os.Stderr, "bench: -probe-pods, -flash-pods and -request-pods must be positive, -restarts not negative")
		os.Exit(2)
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -sizes: %q is not a positive number\n", s)
			os.Exit(2)
		}
		if !slices.Contains(o.sizes, n) {
			o.sizes = append(o.sizes, n)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runsFor is the number of measured runs for n pods.
func (o options) runsFor(n int) int {
	if o.runs > 0 {
		return o.runs
	}
	if n == 1 {
		return 5
	}
	return 3
}

func run(ctx context.Context, o options) (err error) {
	if err := testenv.Available(); err != nil {
		return err
	}
	bin, err := filepath.Abs(o.podvisor)
	if err == nil {
		// /proc/<pid>/exe shows the resolved path; footprint matches on it.
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return fmt.Errorf("podvisor binary: %w", err)
	}
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return fmt.Errorf("podvisor binary %s not found or not executable (build it: CGO_ENABLED=0 go build -o bin/podvisor ./cmd/podvisor)", bin)
	}

	env, err := testenv.Start("")
	if err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	env.Logf = func(format string, args ...any) { logf("testenv: "+format, args...) }
	defer func() {
		if serr := env.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop test environment: %w", serr))
		}
		removeNamespaceDirs(pvNamespace, baseNamespace, floorNamespace, ctrNamespace, ctrFloorNamespace, flashNamespace)
	}()
	// Everything lives below env.Dir: on any failure env.Stop unmounts
	// what is left there (netns, /dev/shm) and kills what names it.
	dir := filepath.Join(env.Dir, "bench")

	rec, err := newRecorder(ctx, env.Address)
	if err != nil {
		return err
	}
	defer rec.close()

	res := &report{
		ContainerdVersion: env.ContainerdVersion,
		Containerd:        env.Containerd,
		CPUs:              runtime.NumCPU(),
		Kernel:            kernelRelease(),
		BaselineLogDriver: o.baseLogDriver && o.start,
	}
	if o.start || o.probes > 0 {
		if err := runPodvisor(ctx, o, env, dir, bin, rec, res); err != nil {
			return err
		}
	}
	if o.mirror {
		if res.Started.IsZero() {
			res.LoadStart, res.Started = loadAverage(), time.Now()
		}
		if res.Mirror, err = runMirror(ctx, o, env, dir, bin, rec); err != nil {
			return err
		}
	}
	if o.flash > 0 {
		if res.Started.IsZero() {
			res.LoadStart, res.Started = loadAverage(), time.Now()
		}
		if res.Flash, err = runFlash(ctx, o, env, dir, bin); err != nil {
			return err
		}
	}
	if o.requests > 0 {
		if res.Started.IsZero() {
			res.LoadStart, res.Started = loadAverage(), time.Now()
		}
		if res.Requests, err = runRequests(ctx, o, env, dir, bin); err != nil {
			return err
		}
	}
	res.LoadEnd = loadAverage()
	res.print(os.Stdout)
	if o.jsonOut != "" {
		if err := res.writeJSON(o.jsonOut); err != nil {
			return err
		}
	}
	return nil
}

// runPodvisor runs the phases of one podvisor without an apiserver: start
// latency (and footprint), then the probes' cost.
func runPodvisor(ctx context.Context, o options, env *testenv.Env, dir, bin string, rec *recorder, res *report) (err error) {
	pv := &pvCase{env: env, bin: bin, dir: filepath.Join(dir, "pv"), logLevel: o.logLevel, logPath: o.podvisorLog}
	defer func() {
		if serr := pv.stop(ctx); serr != nil {
			err = errors.Join(err, serr)
		}
		if err != nil {
			logf("podvisor log (%s):\n%s", pv.logFile(), testenv.Tail(pv.logFile(), 30))
		}
	}()
	if err := pv.start(ctx); err != nil {
		return err
	}
	if o.start {
		if err := runStart(ctx, o, env, dir, bin, rec, pv, res); err != nil {
			return err
		}
	} else {
		logf("warm-up: podvisor (image import), not measured")
		if _, err := pv.measure(ctx, "warmup", 1, nil); err != nil {
			return fmt.Errorf("podvisor warm-up: %w", err)
		}
	}
	if o.probes > 0 {
		if res.Started.IsZero() {
			res.LoadStart, res.Started = loadAverage(), time.Now()
		}
		if res.Probes, err = pv.probeCosts(ctx, o.probePods, o.probes); err != nil {
			return err
		}
	}
	return nil
}

// runStart is the start-latency phase: podvisor and the baseline start
// pods in turn; the footprint is taken with the largest N running.
func runStart(ctx context.Context, o options, env *testenv.Env, dir, bin string, rec *recorder, pv *pvCase, res *report) (err error) {
	baseLog := ""
	if o.baseLogDriver {
		// The driver podvisor itself uses: the small one beside it, else
		// podvisor.
		baseLog = bin
		if d := filepath.Join(filepath.Dir(bin), "podvisor-log-driver"); isLogDriver(d, bin) {
			if _, err := os.Stat(d); err == nil {
				baseLog = d
			}
		}
	}
	base, err := newBaseCase(ctx, env, filepath.Join(dir, "base"), baseLog, false, "")
	if err != nil {
		return err
	}
	defer func() {
		if serr := base.close(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	floor, err := newBaseCase(ctx, env, filepath.Join(dir, "floor"), baseLog, true, "")
	if err != nil {
		return err
	}
	defer func() {
		if serr := floor.close(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	// With -ctr, the same two with a `ctr run -d` process per pod.
	var ctrCase, ctrFloor *baseCase
	if o.ctr != "" {
		bin, err := exec.LookPath(o.ctr)
		if err != nil {
			return fmt.Errorf("-ctr: %w", err)
		}
		for _, c := range []struct {
			to    **baseCase
			dir   string
			floor bool
		}{{&ctrCase, "ctr", false}, {&ctrFloor, "ctr-floor", true}} {
			b, err := newBaseCase(ctx, env, filepath.Join(dir, c.dir), baseLog, c.floor, bin)
			if err != nil {
				return err
			}
			*c.to = b
			defer func() {
				if serr := b.close(); serr != nil {
					err = errors.Join(err, serr)
				}
			}()
		}
	}

	logf("warm-up: podvisor (image import), baseline and floor, not measured")
	if _, err := pv.measure(ctx, "warmup", 1, nil); err != nil {
		return fmt.Errorf("podvisor warm-up: %w", err)
	}
	if _, err := base.measure(ctx, "warmup", 1, nil); err != nil {
		return fmt.Errorf("baseline warm-up: %w", err)
	}
	if _, err := floor.measure(ctx, "warmup", 1, nil); err != nil {
		return fmt.Errorf("floor warm-up: %w", err)
	}
	if ctrCase != nil {
		for _, c := range []*baseCase{ctrCase, ctrFloor} {
			if _, err := c.measure(ctx, "warmup", 1, nil); err != nil {
				return fmt.Errorf("%s warm-up: %w", c.name(), err)
			}
		}
	}

	res.LoadStart, res.Started = loadAverage(), time.Now()
	maxN := slices.Max(o.sizes)
	for _, n := range o.sizes {
		runs := o.runsFor(n)
		for r := range runs {
			cases := []benchCase{pv, base}
			if r%2 == 1 {
				// Alternate the order so neither case always runs
				// right after the other's cleanup.
				cases = []benchCase{base, pv}
			}
			if ctrCase != nil {
				cases = append(cases, ctrCase)
			}
			if n == 1 {
				// The floor is what 1 pod and a restart are held to.
				cases = append(cases, floor)
				if ctrFloor != nil {
					cases = append(cases, ctrFloor)
				}
			}
			for _, c := range cases {
				tag := fmt.Sprintf("%s-n%d-r%d", c.name(), n, r)
				var hook func(context.Context) error
				if n == maxN && r == runs-1 && o.idle > 0 {
					// The footprint, with the pods of the last run of
					// the largest N still running.
					switch c {
					case pv:
						hook = func(ctx context.Context) (err error) {
							res.Footprint, err = pv.footprint(ctx, n, o.idle)
							return err
						}
					case base:
						hook = func(ctx context.Context) error {
							res.BaselineShims = base.shims(n)
							return nil
						}
					}
				}
				rr, err := c.measure(ctx, tag, n, hook)
				if err != nil {
					return fmt.Errorf("%s: %w", tag, err)
				}
				rr.Phases = rec.phases(c.namespace(), rr.T0, n)
				res.Runs = append(res.Runs, rr)
				logf("%-9s N=%-3d run %d: first %7.1f ms  last %7.1f ms  median %7.1f ms", c.name(), n, r+1, rr.First, rr.Last, rr.Median)
			}
		}
	}
	for r := range o.restarts {
		ms, err := pv.measureRestart(ctx, fmt.Sprintf("restart-r%d", r))
		if err != nil {
			return fmt.Errorf("restart run %d: %w", r+1, err)
		}
		res.RestartsMS = append(res.RestartsMS, ms)
		logf("podvisor restart run %d: kill -9 → first instruction %7.1f ms", r+1, ms)
	}
	res.summarize(o.sizes)
	return nil
}

// benchCase is one way of starting pods: podvisor or the baseline.
type benchCase interface {
	name() string
	namespace() string
	// measure starts n pods, waits for every first instruction, calls
	// hook (if any) with the pods still running, and removes them.
	measure(ctx context.Context, tag string, n int, hook func(context.Context) error) (*runResult, error)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" "+format+"\n", args...)
}

// loadAverage is the host's 1-minute load average, -1 if unreadable.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func kernelRelease() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// removeNamespaceDirs removes the empty runc state and cgroup directories
// containerd leaves for a namespace (testenv does this for its own).
func removeNamespaceDirs(namespaces ...string) {
	for _, ns := range namespaces {
		_ = syscall.Rmdir(filepath.Join("/run/containerd/runc", ns))
		_ = syscall.Rmdir(filepath.Join("/sys/fs/cgroup", ns))
		ents, _ := os.ReadDir("/sys/fs/cgroup")
		for _, ent := range ents {
			if ent.IsDir() {
				_ = syscall.Rmdir(filepath.Join("/sys/fs/cgroup", ent.Name(), ns))
			}
		}
	}
}
