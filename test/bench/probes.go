package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/test/testenv"
)

// probeConfig is one way of probing the probe phase's pods.
type probeConfig struct {
	name string
	// probes is the container's probe stanzas (YAML, indented for a
	// container), perPod how many probes that makes per pod.
	probes string
	perPod int
	// counts is where runs are counted: "" none, "http" the target's
	// request log, "exec" containerd's exec-started events.
	counts string
}

// probePeriod is every probe's periodSeconds.
const probePeriod = time.Second

// probeConfigs are the configurations the probe phase measures, in order:
// the same pods without probes, with an httpGet readiness and liveness
// probe, and with an exec liveness probe.
var probeConfigs = []probeConfig{
	{name: "none"},
	{name: "httpGet", perPod: 2, counts: "http", probes: `    readinessProbe:
      httpGet: {path: /ready, port: http}
      periodSeconds: 1
    livenessProbe:
      httpGet: {path: /live, port: http}
      periodSeconds: 1
`},
	// The exec probe's timeout is 5 s, not the default 1 s: on a small
	// busy host 30 runc execs a second can take longer than that, and the
	// restarts that follow would be counted as the probes' cost.
	{name: "exec", perPod: 1, counts: "exec", probes: `    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
      timeoutSeconds: 5
`},
}

// probeTargetPort is the HTTP port of the probe phase's target.
const probeTargetPort = 8080

// probeManifest is a pod whose container is probetarget answering HTTP
// only (its request log counts the httpGet runs), with cfg's probes.
func probeManifest(name string, cfg probeConfig) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: [%q, "-http", "%d", "-https", "-1", "-tcp", "-1", "-grpc", "-1"]
    ports:
    - name: http
      containerPort: %d
%s`, name, testenv.ImageRef, testenv.ProbeTargetPath, probeTargetPort, probeTargetPort, cfg.probes)
}

// probeCost is podvisor's cost with pods running under one probe
// configuration, over one window.
type probeCost struct {
	Config    string  `json:"config"`
	Pods      int     `json:"pods"`
	WindowSec float64 `json:"window_s"`
	// Runs is the probe runs seen in the window (the target's request log
	// for httpGet, containerd's exec-started events for exec), Expected
	// what pods × probes × window / period would make.
	Runs     int     `json:"probe_runs"`
	Expected float64 `json:"probe_runs_expected"`
	Podvisor usage   `json:"podvisor"`
	// MSPerRun is podvisor's CPU per probe run above the configuration
	// without probes (0 for that one).
	MSPerRun float64 `json:"podvisor_ms_per_run,omitempty"`
	// RuntimeMSPerRun is the same for containerd and the shims, with the
	// children the shims reaped (runc, the probe's command).
	RuntimeMSPerRun float64 `json:"runtime_ms_per_run,omitempty"`
	Shims           usage   `json:"shims"`
	Containerd      usage   `json:"containerd"`
	LogDrivers      usage   `json:"log_drivers"`
	// Goroutines and FDs are podvisor's at the end of the window, and
	// after the pods were removed again.
	Goroutines      int `json:"goroutines"`
	FDs             int `json:"fds"`
	GoroutinesAfter int `json:"goroutines_after"`
	FDsAfter        int `json:"fds_after"`
	// Restarts is the containers' restart count at the end of the window
	// (a probe that failed under load kills its container); NotReady the
	// pods not ready then.
	Restarts int `json:"restarts"`
	NotReady int `json:"not_ready"`
}

// probePhase is the probe phase's results.
type probePhase struct {
	// GoroutinesBefore and FDsBefore are podvisor's before the first
	// configuration's pods were created.
	GoroutinesBefore int         `json:"goroutines_before"`
	FDsBefore        int         `json:"fds_before"`
	Configs          []probeCost `json:"configs"`
}

// probeCosts runs n probetarget pods under each probe configuration in
// turn and measures podvisor (and containerd, its shims and the log
// drivers) over window once they are all running and ready.
func (p *pvCase) probeCosts(ctx context.Context, n int, window time.Duration) (*probePhase, error) {
	execs, err := newExecCounter(ctx, p.env.Address, pvNamespace)
	if err != nil {
		return nil, err
	}
	defer execs.close()
	ph := &probePhase{}
	if ph.GoroutinesBefore, err = p.goroutines(ctx); err != nil {
		return nil, err
	}
	ph.FDsBefore = fdCount(p.cmd.Process.Pid)
	for _, cfg := range probeConfigs {
		c, err := p.probeCost(ctx, cfg, n, window, execs)
		if err != nil {
			return nil, fmt.Errorf("probes %s: %w", cfg.name, err)
		}
		if len(ph.Configs) > 0 {
			none := ph.Configs[0]
			c.MSPerRun = perRun(*c, none, podvisorMS)
			c.RuntimeMSPerRun = perRun(*c, none, runtimeMS)
		}
		ph.Configs = append(ph.Configs, *c)
		logf("probes %-8s podvisor CPU %.2f%% over %.0f s, %d probe runs (%.0f expected), %.3f ms/run, RSS %.1f MiB, %d goroutines (%d after removal)",
			cfg.name, c.Podvisor.CPUPercent, c.WindowSec, c.Runs, c.Expected, c.MSPerRun, c.Podvisor.RSSMiB, c.Goroutines, c.GoroutinesAfter)
	}
	return ph, nil
}

// probeCost measures one configuration: it creates the pods, waits until
// they are running and ready, lets the start settle, measures, and
// removes them.
func (p *pvCase) probeCost(ctx context.Context, cfg probeConfig, n int, window time.Duration, execs *execCounter) (_ *probeCost, err error) {
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("probes-%s-p%02d", strings.ToLower(cfg.name), i)
		staged := filepath.Join(p.staging, names[i]+".yaml")
		if err := os.WriteFile(staged, []byte(probeManifest(names[i], cfg)), 0o644); err != nil {
			return nil, fmt.Errorf("write manifest: %w", err)
		}
	}
	removed := false
	defer func() {
		if !removed {
			if cerr := p.remove(ctx, names); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	for _, name := range names {
		if err := os.Rename(filepath.Join(p.staging, name+".yaml"), filepath.Join(p.manifests, name+".yaml")); err != nil {
			return nil, fmt.Errorf("rename manifest: %w", err)
		}
	}
	if err := p.waitRunningFor(ctx, n, startTimeout(n)); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, p.describe(ctx))
	}
	// Past the start's own work and the probes' first, jittered runs; a
	// measurement pause, not synchronisation.
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return nil, err
	}
	logf("probes %s: %d pods running and ready, measuring for %v", cfg.name, n, window)
	groups := p.footprintGroups()
	from := time.Now()
	use, err := measureGroups(ctx, groups, window)
	to := time.Now()
	if err != nil {
		return nil, err
	}
	c := &probeCost{
		Config:     cfg.name,
		Pods:       n,
		WindowSec:  to.Sub(from).Seconds(),
		Expected:   float64(n*cfg.perPod) * to.Sub(from).Seconds() / probePeriod.Seconds(),
		Podvisor:   use["podvisor"],
		Shims:      use["shims"],
		Containerd: use["containerd"],
		LogDrivers: use["log drivers"],
	}
	if c.Podvisor.Procs != 1 {
		return nil, fmt.Errorf("podvisor process %d not found", p.cmd.Process.Pid)
	}
	if c.Goroutines, err = p.goroutines(ctx); err != nil {
		return nil, err
	}
	c.FDs = fdCount(p.cmd.Process.Pid)
	if c.Restarts, c.NotReady, err = p.restarts(ctx); err != nil {
		return nil, err
	}
	// The log driver stamps a line when it reads it, and containerd's
	// events are delivered a little after their stamp: give the last runs
	// of the window time to arrive.
	if err := sleepCtx(ctx, time.Second); err != nil {
		return nil, err
	}
	switch cfg.counts {
	case "exec":
		c.Runs = execs.count(from, to)
	case "http":
		for _, name := range names {
			k, err := countLogRequests(filepath.Join(p.dir, "logs"), name, from, to)
			if err != nil {
				return nil, err
			}
			c.Runs += k
		}
	}
	removed = true
	if err := p.remove(ctx, names); err != nil {
		return nil, err
	}
	if c.GoroutinesAfter, err = p.goroutines(ctx); err != nil {
		return nil, err
	}
	c.FDsAfter = fdCount(p.cmd.Process.Pid)
	return c, nil
}

// podvisorMS is podvisor's CPU time in c's window.
func podvisorMS(c probeCost) float64 { return c.Podvisor.CPUMS }

// runtimeMS is the CPU time of containerd and the shims in c's window,
// with the children they reaped.
func runtimeMS(c probeCost) float64 {
	return c.Shims.CPUMS + c.Containerd.CPUMS + (c.Shims.ChildCPUPercent+c.Containerd.ChildCPUPercent)*c.WindowSec*10
}

// perRun is the CPU time (ms) that cpu counts in c's window above the
// same processes' rate in none, divided by c's probe runs; 0 without runs.
func perRun(c, none probeCost, cpu func(probeCost) float64) float64 {
	if c.Runs <= 0 || c.WindowSec <= 0 || none.WindowSec <= 0 {
		return 0
	}
	extra := cpu(c) - cpu(none)*c.WindowSec/none.WindowSec
	return extra / float64(c.Runs)
}

// footprintGroups selects podvisor, its log drivers, its shims and
// containerd among the host's processes.
func (p *pvCase) footprintGroups() map[string]func(proc) bool {
	return map[string]func(proc) bool{
		"podvisor": func(pr proc) bool { return pr.pid == p.cmd.Process.Pid },
		"log drivers": func(pr proc) bool {
			return pr.pid != p.cmd.Process.Pid && len(pr.args) > 1 && pr.args[1] == "log-driver" && isLogDriver(strings.TrimSuffix(pr.exe, " (deleted)"), p.bin)
		},
		"shims":      shimOf(p.env.Address, pvNamespace),
		"containerd": containerdOf(p.env),
	}
}

// restarts sums the restart counts of the pods the API lists and counts
// the pods with a container not ready.
func (p *pvCase) restarts(ctx context.Context) (restarts, notReady int, err error) {
	list, err := p.api.Pods(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, pod := range list.Items {
		ready := len(pod.Status.ContainerStatuses) > 0
		for _, cs := range pod.Status.ContainerStatuses {
			restarts += int(cs.RestartCount)
			ready = ready && cs.Ready
		}
		if !ready {
			notReady++
		}
	}
	return restarts, notReady, nil
}

// goroutines asks podvisor's pprof endpoint how many goroutines it has.
func (p *pvCase) goroutines(ctx context.Context) (int, error) {
	sock := filepath.Join(p.runDir, "podvisor.sock")
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://podvisor/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		return 0, err
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("goroutine profile: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("goroutine profile: %s", res.Status)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("goroutine profile: %w", err)
	}
	return parseGoroutineTotal(line)
}

// parseGoroutineTotal reads the count from the first line of a debug=1
// goroutine profile ("goroutine profile: total 42").
func parseGoroutineTotal(line string) (int, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile: unexpected first line %q", line)
	}
	return strconv.Atoi(v)
}

// fdCount is the number of open file descriptors of pid, -1 if unknown.
func fdCount(pid int) int {
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return -1
	}
	return len(ents)
}

// countLogRequests counts the HTTP requests probetarget logged between
// from and to in the logs of pod name's container "main" below logDir.
func countLogRequests(logDir, name string, from, to time.Time) (int, error) {
	files, err := filepath.Glob(filepath.Join(logDir, "*_"+name+"-*", "main", "*.log"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("no log of pod %s below %s", name, logDir)
	}
	total := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return 0, err
		}
		k, err := countRequests(fh, from, to)
		fh.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		total += k
	}
	return total, nil
}

// countRequests counts the CRI log lines stamped in [from, to) that are
// probetarget's record of an HTTP request ("http GET /path -> 200 ...").
func countRequests(r io.Reader, from, to time.Time) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		rec, err := crilog.Parse(sc.Bytes())
		if err != nil {
			continue // podvisor's own notes in the log, or a torn line
		}
		if rec.Time.Before(from) || !rec.Time.Before(to) {
			continue
		}
		if strings.HasPrefix(string(rec.Content), "http ") {
			n++
		}
	}
	return n, sc.Err()
}

// execCounter records when containerd started exec processes in one
// namespace.
type execCounter struct {
	client *client.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	at  []time.Time
	err error
}

func newExecCounter(ctx context.Context, address, ns string) (*execCounter, error) {
	c, err := client.New(address)
	if err != nil {
		return nil, fmt.Errorf("containerd client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &execCounter{client: c, cancel: cancel, done: make(chan struct{})}
	ch, errs := c.Subscribe(ctx, fmt.Sprintf(`topic=="/tasks/exec-started",namespace==%q`, ns))
	go func() {
		defer close(e.done)
		for {
			select {
			case env := <-ch:
				if v, err := typeurl.UnmarshalAny(env.Event); err == nil {
					if _, ok := v.(*apievents.TaskExecStarted); ok {
						e.mu.Lock()
						e.at = append(e.at, env.Timestamp)
						e.mu.Unlock()
					}
				}
			case err := <-errs:
				e.mu.Lock()
				if ctx.Err() == nil {
					e.err = fmt.Errorf("containerd event stream: %w", err)
				}
				e.mu.Unlock()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return e, nil
}

// count is the number of execs started in [from, to), -1 if the event
// stream broke.
func (e *execCounter) count(from, to time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		logf("exec count: %v", e.err)
		return -1
	}
	n := 0
	for _, t := range e.at {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

func (e *execCounter) close() {
	e.cancel()
	<-e.done
	e.client.Close()
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
