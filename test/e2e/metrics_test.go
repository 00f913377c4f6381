package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/creack/pty"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/examples"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/podvisor/podvisor/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
)

// metricsPods are a busy-looping container with a readiness probe and a
// container that crashes at once, again and again.
const metricsBusy = `apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  containers:
  - name: loop
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while :; do :; done"]
    resources: {limits: {cpu: 100m}}
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`

const metricsCrash = `apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exit 1"]
`

// scrape returns /metrics over the socket, parsed.
func (d *daemon) scrape() map[string]*dto.MetricFamily {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := api.NewClient(d.sock).Metrics(ctx)
	if err != nil {
		d.t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		d.t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// metricValue is the value of the series of fams[name] with the labels
// given (and any others); ok is false when there is none.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// TestMetrics: a running podvisor's /metrics, scraped over the socket,
// counts its pods by phase, a crashing container's restarts as they grow,
// probe runs, a pod start, the busy container's CPU and memory, the image
// import and the invalid manifest, and has every series the Grafana
// dashboard queries; podvisor top shows the busy container's CPU.
func TestMetrics(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("busy.yaml", metricsBusy)
	d.writeManifest("crash.yaml", metricsCrash)
	d.writeManifest("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec: {containers: [{name: x}]}\n")
	d.waitPod("busy", 60*time.Second, "ready", func(p *v1.Pod) bool { return running(p) && containerReady(p, "loop") })
	d.waitPod("crash", 60*time.Second, "restarted", func(p *v1.Pod) bool { return containerStatus(p, "main").RestartCount >= 1 })

	busy, crash := "busy-"+node, "crash-"+node
	var fams map[string]*dto.MetricFamily
	d.poll("the busy container's CPU and probes in /metrics", 30*time.Second, func() (bool, string) {
		fams = d.scrape()
		cpu, _ := metricValue(fams, "podvisor_container_cpu_usage_seconds_total", "pod", busy, "container", "loop")
		probes, _ := metricValue(fams, "podvisor_prober_probe_total", "probe_type", "Readiness", "result", "successful", "pod", busy, "container", "loop")
		return cpu > 0 && probes >= 1, "cpu " + strconv.FormatFloat(cpu, 'g', -1, 64) + "s, readiness successes " + strconv.FormatFloat(probes, 'g', -1, 64)
	})
	for _, c := range []struct {
		name   string
		labels []string
		check  func(float64) bool
		want   string
	}{
		{"podvisor_pods", []string{"phase", "Running"}, func(v float64) bool { return v == 2 }, "2"},
		{"podvisor_pods", []string{"phase", "Pending"}, func(v float64) bool { return v == 0 }, "0"},
		{"podvisor_pods", []string{"phase", "Failed"}, func(v float64) bool { return v == 0 }, "0"},
		{"podvisor_container_memory_working_set_bytes", []string{"pod", busy, "container", "loop"}, func(v float64) bool { return v > 0 }, "> 0"},
		{"podvisor_prober_probe_duration_seconds", []string{"probe_type", "Readiness", "pod", busy}, func(v float64) bool { return v >= 1 }, ">= 1 observation"},
		{"podvisor_pod_start_duration_seconds", nil, func(v float64) bool { return v >= 1 }, ">= 1 observation"},
		{"podvisor_manifest_files_invalid", nil, func(v float64) bool { return v == 1 }, "1 (broken.yaml)"},
		{"podvisor_manifest_rejected_total", nil, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"podvisor_image_imports_total", []string{"result", "success"}, func(v float64) bool { return v >= 1 }, ">= 1 (busybox.tar)"},
		{"podvisor_image_import_duration_seconds", nil, func(v float64) bool { return v >= 1 }, ">= 1 observation"},
		{"go_goroutines", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"process_resident_memory_bytes", nil, func(v float64) bool { return v > 0 }, "> 0"},
	} {
		v, ok := metricValue(fams, c.name, c.labels...)
		if !ok || !c.check(v) {
			t.Errorf("%s%v = %v (present: %v), want %s", c.name, c.labels, v, ok, c.want)
		}
	}
	if h := fams["podvisor_pod_start_duration_seconds"]; h != nil && len(h.Metric) == 1 {
		if s := h.Metric[0].GetHistogram().GetSampleSum(); s <= 0 || s > 120 {
			t.Errorf("pod start latencies sum to %vs", s)
		}
	}

	// The crashing container's restarts grow in the scrapes.
	first, ok := metricValue(fams, "podvisor_container_restarts_total", "pod", crash, "container", "main")
	if !ok || first < 1 {
		t.Errorf("restarts of the crashing container: %v (present %v), want >= 1", first, ok)
	}
	d.poll("the crashing container's restarts to grow", 60*time.Second, func() (bool, string) {
		now, _ := metricValue(d.scrape(), "podvisor_container_restarts_total", "pod", crash, "container", "main")
		return now > first, strconv.FormatFloat(now, 'g', -1, 64)
	})

	// Every series the dashboard queries exists.
	series, err := metrics.DashboardSeries(examples.GrafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for name, mf := range d.scrape() {
		known[name] = len(mf.GetMetric()) > 0
	}
	for _, s := range series {
		if metrics.Family(s, known) == "" {
			t.Errorf("the dashboard queries %s; podvisor's /metrics has no such series", s)
		}
	}

	// podvisor top, not on a terminal: one table, the busy container's
	// CPU above 0 (it is limited to 100m) and memory for every running
	// container.
	out, err := exec.Command(podvisorBin, "top", "--socket", d.sock, "--interval", "1s").CombinedOutput()
	if err != nil {
		t.Fatalf("podvisor top: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "\x1b") || strings.Count(string(out), "NAMESPACE") != 1 {
		t.Errorf("podvisor top not on a terminal printed escapes or more than one table:\n%q", out)
	}
	row := regexp.MustCompile(`(?m)^default\s+` + busy + `\s+loop\s+(\d+)m\s+(\d+)Mi\s`).FindStringSubmatch(string(out))
	if row == nil {
		t.Fatalf("podvisor top has no CPU and memory for busy/loop:\n%s", out)
	}
	if m, _ := strconv.Atoi(row[1]); m < 10 || m > 150 {
		t.Errorf("busy/loop uses %sm by podvisor top, want about 100m (its limit):\n%s", row[1], out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 6 && f[0] == "default" && f[1] == busy && strings.HasPrefix(f[6], "running") && f[4] == "-" {
			t.Errorf("a running container without memory: %s", line)
		}
	}
}

// TestTopTerminal: under a pseudo-terminal podvisor top redraws the screen
// in place (home and clear) at every refresh, each line cut to the window's
// width after a resize, and puts the cursor and the screen back when
// interrupted, exiting 0.
func TestTopTerminal(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("busy.yaml", metricsBusy)
	d.waitPod("busy", 60*time.Second, "running", running)

	cmd := exec.Command(podvisorBin, "top", "--socket", d.sock, "--interval", "300ms")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return // EIO once the command has exited
			}
		}
	}()
	output := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	const redraw = "\x1b[H\x1b[2J"
	d.poll("podvisor top to redraw three times", 30*time.Second, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			return false, "podvisor top exited: " + errString(err) + "\n" + output()
		default:
		}
		o := output()
		return strings.Count(o, redraw) >= 3 && regexp.MustCompile(`busy-`+node+`\s+loop\s+\d+m`).MatchString(o), strconv.Quote(o)
	})
	// A narrower window: the next frames are cut to its width, not wrapped.
	mark := len(output())
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 50}); err != nil {
		t.Fatal(err)
	}
	d.poll("podvisor top to redraw at the new width", 30*time.Second, func() (bool, string) {
		frames := strings.Split(output()[mark:], redraw)
		if len(frames) < 3 {
			return false, "no full frame since the resize"
		}
		frame := frames[len(frames)-2] // the last complete one
		for _, line := range strings.Split(strings.ReplaceAll(frame, "\r", ""), "\n") {
			if len(line) > 50 {
				return false, "a line of " + strconv.Itoa(len(line)) + " columns: " + strconv.Quote(line)
			}
		}
		return strings.HasPrefix(frame, "NAMESPACE"), strconv.Quote(frame)
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("podvisor top after Ctrl-C: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("podvisor top did not stop on SIGINT")
	}
	select {
	case <-readDone:
	case <-time.After(5 * time.Second):
		tty.Close()
	}
	o := output()
	if !strings.HasPrefix(o, "\x1b[?1049h\x1b[?25l") {
		t.Errorf("podvisor top did not enter the alternate screen and hide the cursor first: %q", o[:min(len(o), 40)])
	}
	if !strings.HasSuffix(o, "\x1b[?25h\x1b[?1049l") {
		t.Errorf("podvisor top did not restore the cursor and the screen on exit: ...%q", o[max(0, len(o)-80):])
	}
}

func errString(err error) string {
	if err == nil {
		return "exit 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}

// TestVersion: a running podvisor tells its version, the Go it was built
// with and the version of the containerd it talks to.
func TestVersion(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := api.NewClient(d.sock).Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := containerd.New(env.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want, err := cl.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != version.Version || got.GoVersion != runtime.Version() || got.Platform != runtime.GOOS+"/"+runtime.GOARCH ||
		got.ContainerdVersion != want.Version || got.ContainerdError != "" {
		t.Errorf("Version = %+v; want podvisor %s, %s, %s/%s, containerd %s", got, version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH, want.Version)
	}
}
