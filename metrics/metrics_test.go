package metrics

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/examples"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/probes"
	"github.com/podvisor/podvisor/status"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeStore is a Store of fixed pods with no changes to watch.
type fakeStore struct{ pods []v1.Pod }

func (f fakeStore) Pods() []v1.Pod { return f.pods }
func (f fakeStore) Watch(context.Context, uint64) (<-chan status.PodChange, error) {
	return nil, errors.New("no watch")
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// v1Cgroup writes a v1 container cgroup's files under root.
func v1Cgroup(t *testing.T, root, rel string, cpuNanos, used, inactive string) {
	writeFiles(t, root, map[string]string{
		"cpuacct" + rel + "/cpuacct.usage":        cpuNanos + "\n",
		"memory" + rel + "/memory.usage_in_bytes": used + "\n",
		"memory" + rel + "/memory.stat":           "cache 10\nrss 20\ninactive_file 999\ntotal_inactive_file " + inactive + "\ntotal_rss 5\n",
	})
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mt(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func running(name string, started time.Duration) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(started)}}}
}

func TestStartLatency(t *testing.T) {
	spec := v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}
	pod := func(created time.Duration, st ...v1.ContainerStatus) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: mt(created)}, Spec: spec, Status: v1.PodStatus{ContainerStatuses: st}}
	}
	restarted := running("b", 9*time.Second)
	restarted.LastTerminationState.Terminated = &v1.ContainerStateTerminated{StartedAt: mt(3 * time.Second)}
	done := v1.ContainerStatus{Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: mt(4 * time.Second)}}}
	waiting := v1.ContainerStatus{Name: "b", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want time.Duration
		ok   bool
	}{
		{"both running: the last start", pod(time.Second, running("a", 2*time.Second), running("b", 5*time.Second)), 4 * time.Second, true},
		{"one still waiting", pod(time.Second, running("a", 2*time.Second), waiting), 0, false},
		{"one missing", pod(time.Second, running("a", 2*time.Second)), 0, false},
		{"restarted: its first start counts", pod(time.Second, running("a", 2*time.Second), restarted), 2 * time.Second, true},
		{"ran to completion", pod(time.Second, running("a", 2*time.Second), done), 3 * time.Second, true},
		{"created before podvisor started", pod(-time.Second, running("a", 2*time.Second), running("b", 5*time.Second)), 0, false},
	} {
		got, ok := startLatency(tc.pod, t0)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: startLatency = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestManifestSnapshots(t *testing.T) {
	m := New(Options{Store: fakeStore{}})
	bad := func(path, reason string) *manifest.FileError { return &manifest.FileError{Path: path, Reason: reason} }
	steps := []struct {
		errs             []*manifest.FileError
		invalid, rejects float64
	}{
		{nil, 0, 0},
		{[]*manifest.FileError{bad("/m/a.yaml", "x"), bad("/m/a.yaml", "y"), bad("/m/b.yaml", "z")}, 2, 2},
		{[]*manifest.FileError{bad("/m/a.yaml", "x"), bad("/m/a.yaml", "y"), bad("/m/b.yaml", "z")}, 2, 2}, // a relist: nothing new
		{[]*manifest.FileError{bad("/m/a.yaml", "x")}, 1, 3},                                               // a.yaml's errors changed, b.yaml fixed
		{nil, 0, 3},
		{[]*manifest.FileError{bad("/m/b.yaml", "z")}, 1, 4}, // broken again
	}
	for i, s := range steps {
		m.ObserveSnapshot(manifest.Snapshot{Errors: s.errs})
		if got := testutil.ToFloat64(m.manifestInvalid); got != s.invalid {
			t.Errorf("step %d: podvisor_manifest_files_invalid = %v, want %v", i, got, s.invalid)
		}
		if got := testutil.ToFloat64(m.manifestRejected); got != s.rejects {
			t.Errorf("step %d: podvisor_manifest_rejected_total = %v, want %v", i, got, s.rejects)
		}
	}
}

func TestProbeRun(t *testing.T) {
	m := New(Options{Store: fakeStore{}})
	tgt := probes.Target{PodName: "web-n", Namespace: "default", Container: &v1.Container{Name: "c"}}
	m.ProbeRun(probes.Run{Target: tgt, Kind: probes.Liveness, Result: probes.Success, Duration: 20 * time.Millisecond})
	m.ProbeRun(probes.Run{Target: tgt, Kind: probes.Liveness, Result: probes.Failure, Duration: 30 * time.Millisecond})
	m.ProbeRun(probes.Run{Target: tgt, Kind: probes.Liveness, Result: probes.Failure})
	m.ProbeRun(probes.Run{Target: tgt, Kind: probes.Readiness, Result: probes.Unknown})
	for _, tc := range []struct {
		kind, result string
		want         float64
	}{{"Liveness", "successful", 1}, {"Liveness", "failed", 2}, {"Readiness", "unknown", 1}, {"Startup", "failed", 0}} {
		if got := testutil.ToFloat64(m.probeTotal.WithLabelValues(tc.kind, tc.result, "default", "web-n", "c")); got != tc.want {
			t.Errorf("podvisor_prober_probe_total{probe_type=%s,result=%s} = %v, want %v", tc.kind, tc.result, got, tc.want)
		}
	}
	h := histogram(t, m, "podvisor_prober_probe_duration_seconds", "probe_type", "Liveness")
	if h.GetSampleCount() != 3 || h.GetSampleSum() < 0.049 || h.GetSampleSum() > 0.051 {
		t.Errorf("liveness durations: %d samples, sum %v; want 3 and 0.05", h.GetSampleCount(), h.GetSampleSum())
	}
}

// histogram returns the gathered histogram with label name=value.
func histogram(t *testing.T, m *Metrics, family, name, value string) *dto.Histogram {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, met := range mf.GetMetric() {
			for _, l := range met.GetLabel() {
				if name == "" || l.GetName() == name && l.GetValue() == value {
					return met.GetHistogram()
				}
			}
			if name == "" {
				return met.GetHistogram()
			}
		}
	}
	t.Fatalf("no %s{%s=%q} gathered", family, name, value)
	return nil
}

type importFunc func(ctx context.Context, name string) ([]string, error)

func (f importFunc) Import(ctx context.Context, name string, _ io.Reader) ([]string, error) {
	return f(ctx, name)
}

func TestImporter(t *testing.T) {
	m := New(Options{Store: fakeStore{}})
	imp := m.Importer(importFunc(func(ctx context.Context, path string) ([]string, error) {
		if strings.Contains(path, "bad") {
			return nil, errors.New("not an archive")
		}
		return []string{"busybox:latest"}, ctx.Err()
	}))
	ctx := t.Context()
	if imgs, err := imp.Import(ctx, "good.tar", nil); err != nil || len(imgs) != 1 {
		t.Fatalf("Import passes the result on: got %v, %v", imgs, err)
	}
	if _, err := imp.Import(ctx, "bad.tar", nil); err == nil {
		t.Fatal("Import swallowed the error")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	imp.Import(cancelled, "good.tar", nil)
	if got := testutil.ToFloat64(m.imports.WithLabelValues("success")); got != 1 {
		t.Errorf("successes = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.imports.WithLabelValues("failure")); got != 1 {
		t.Errorf("failures = %v, want 1 (an interrupted import is not one)", got)
	}
	if h := histogram(t, m, "podvisor_image_import_duration_seconds", "", ""); h.GetSampleCount() != 2 {
		t.Errorf("import durations: %d, want 2", h.GetSampleCount())
	}
}

// testPods are a running pod with a running and a crashing container, and
// a pending one.
func testPods() []v1.Pod {
	busy := running("busy", 0)
	busy.ContainerID = "containerd://c1"
	busy.RestartCount = 1
	crash := v1.ContainerStatus{Name: "crash", RestartCount: 4, ContainerID: "containerd://c2",
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	return []v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a-n", UID: "u1", Annotations: map[string]string{
			status.ProbeResultsAnnotation: `{"busy":{"liveness":{"result":"Success","time":"2026-01-02T03:04:05Z"}}}`}},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{busy, crash}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "b-n", UID: "u2"}, Status: v1.PodStatus{Phase: v1.PodPending}},
	}
}

func TestCollector(t *testing.T) {
	root := t.TempDir()
	v1Cgroup(t, root, "/ns/podu1/c1", "3000000000", "5242880", "1048576")
	// The crashing container's cgroup still exists but it is not running:
	// it is not read.
	v1Cgroup(t, root, "/ns/podu1/c2", "7", "7", "0")
	m := New(Options{Store: fakeStore{testPods()}, CgroupRoot: root, CgroupParent: "ns"})
	want := `
# HELP podvisor_pods Number of pods podvisor supervises, by phase.
# TYPE podvisor_pods gauge
podvisor_pods{phase="Failed"} 0
podvisor_pods{phase="Pending"} 1
podvisor_pods{phase="Running"} 1
podvisor_pods{phase="Succeeded"} 0
podvisor_pods{phase="Unknown"} 0
# HELP podvisor_container_restarts_total Number of times a container has been restarted, from its status (restartCount).
# TYPE podvisor_container_restarts_total counter
podvisor_container_restarts_total{container="busy",namespace="default",pod="a-n"} 1
podvisor_container_restarts_total{container="crash",namespace="default",pod="a-n"} 4
# HELP podvisor_container_cpu_usage_seconds_total Cumulative CPU time of a running container instance in seconds, from its cgroup.
# TYPE podvisor_container_cpu_usage_seconds_total counter
podvisor_container_cpu_usage_seconds_total{container="busy",namespace="default",pod="a-n"} 3
# HELP podvisor_container_memory_working_set_bytes Working set of a running container in bytes (memory in use minus inactive file cache), from its cgroup.
# TYPE podvisor_container_memory_working_set_bytes gauge
podvisor_container_memory_working_set_bytes{container="busy",namespace="default",pod="a-n"} 4.194304e+06
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"podvisor_pods", "podvisor_container_restarts_total", "podvisor_container_cpu_usage_seconds_total", "podvisor_container_memory_working_set_bytes"); err != nil {
		t.Error(err)
	}
}

func TestStats(t *testing.T) {
	root := t.TempDir()
	v1Cgroup(t, root, "/ns/podu1/c1", "3000000000", "5242880", "1048576")
	m := New(Options{Store: fakeStore{testPods()}, CgroupRoot: root, CgroupParent: "ns", Now: func() time.Time { return t0 }})
	s := m.Stats()
	if len(s.Pods) != 2 || len(s.Pods[0].Containers) != 2 {
		t.Fatalf("got %+v", s)
	}
	busy, crash := s.Pods[0].Containers[0], s.Pods[0].Containers[1]
	if busy.ID != "c1" || busy.State != "running" || busy.CPU == nil || busy.CPU.UsageCoreNanoSeconds != 3e9 ||
		busy.Memory == nil || busy.Memory.WorkingSetBytes != 4<<20 || !busy.CPU.Time.Equal(t0) || busy.Probes["liveness"] != "Success" {
		t.Errorf("busy: %+v", busy)
	}
	if crash.ID != "" || crash.State != "waiting" || crash.Reason != "CrashLoopBackOff" || crash.RestartCount != 4 || crash.CPU != nil || crash.Memory != nil {
		t.Errorf("crash: %+v", crash)
	}
}

func TestWatchStarts(t *testing.T) {
	store := status.NewStore(nil)
	m := New(Options{Store: store})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.WatchStarts(ctx) }()
	defer func() { cancel(); <-done }()
	created := time.Now()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u", CreationTimestamp: metav1.NewTime(created)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}}
	store.SetPod(pod)
	started := pod.DeepCopy()
	started.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(created.Add(1500 * time.Millisecond))}}}}
	store.SetPod(started)
	poll(t, "one start observed", func() bool {
		return histogram(t, m, "podvisor_pod_start_duration_seconds", "", "").GetSampleCount() == 1
	})
	// A later change of the same pod is not another start.
	again := started.DeepCopy()
	again.Status.ContainerStatuses[0].RestartCount = 1
	store.SetPod(again)
	other := started.DeepCopy()
	other.UID, other.Name = "u2", "q"
	store.SetPod(other)
	poll(t, "the second pod's start observed", func() bool {
		return histogram(t, m, "podvisor_pod_start_duration_seconds", "", "").GetSampleCount() == 2
	})
	if h := histogram(t, m, "podvisor_pod_start_duration_seconds", "", ""); h.GetSampleSum() != 3 {
		t.Errorf("latencies sum to %v, want 3 (1.5 s each, observed once per pod)", h.GetSampleSum())
	}
}

// TestProbeSeriesDeletedWithPod: a pod's probe series go when the pod
// leaves the store; another pod's stay.
func TestProbeSeriesDeletedWithPod(t *testing.T) {
	store := status.NewStore(nil)
	m := New(Options{Store: store})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.WatchStarts(ctx) }()
	defer func() { cancel(); <-done }()
	for _, name := range []string{"web-n", "db-n"} {
		store.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)}})
		tgt := probes.Target{PodName: name, Namespace: "default", Container: &v1.Container{Name: "c"}}
		m.ProbeRun(probes.Run{Target: tgt, Kind: probes.Liveness, Result: probes.Success, Duration: time.Millisecond})
		m.ProbeRun(probes.Run{Target: tgt, Kind: probes.Readiness, Result: probes.Failure, Duration: time.Millisecond})
	}
	series := func(pod string) int { return countPod(t, m, pod) }
	if n := series("web-n"); n != 4 {
		t.Fatalf("web-n has %d probe series, want 4 (2 totals, 2 histograms)", n)
	}
	store.DeletePod("web-n")
	poll(t, "web-n's probe series gone", func() bool { return series("web-n") == 0 })
	if n := series("db-n"); n != 4 {
		t.Errorf("db-n has %d probe series after web-n went, want 4", n)
	}
}

// countPod counts the gathered podvisor_prober_probe_* series of pod.
func countPod(t *testing.T, m *Metrics, pod string) int {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "podvisor_prober_probe_") {
			continue
		}
		for _, met := range mf.GetMetric() {
			for _, l := range met.GetLabel() {
				if l.GetName() == "pod" && l.GetValue() == pod {
					n++
				}
			}
		}
	}
	return n
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

func TestExprSeries(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`sum by (phase) (podvisor_pods{instance=~"$instance"})`, "podvisor_pods"},
		{`histogram_quantile(0.99, sum by (le) (rate(x_bucket{a="b"}[$__rate_interval])))`, "x_bucket"},
		{`rate(a_total[5m]) / on(pod) group_left(node) b  > bool 1e3`, "a_total b"},
		{`sum without (le) (increase(c{result!="successful"}[1h] offset 5m)) or vector(0)`, "c"},
		{`go_goroutines`, "go_goroutines"},
	} {
		if got := strings.Join(exprSeries(tc.expr), " "); got != tc.want {
			t.Errorf("exprSeries(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// TestDashboardSeriesExist: every series examples/grafana-dashboard.json
// queries is one podvisor's registry exposes, once each instrument has
// seen something.
func TestDashboardSeriesExist(t *testing.T) {
	root := t.TempDir()
	v1Cgroup(t, root, "/ns/podu1/c1", "3000000000", "5242880", "1048576")
	m := New(Options{Store: fakeStore{testPods()}, CgroupRoot: root, CgroupParent: "ns"})
	m.ProbeRun(probes.Run{Target: probes.Target{Container: &v1.Container{Name: "c"}}, Kind: probes.Liveness, Result: probes.Failure})
	m.ObserveSnapshot(manifest.Snapshot{})
	m.Importer(importFunc(func(context.Context, string) ([]string, error) { return nil, nil })).Import(t.Context(), "x", nil)
	m.podStart.Observe(1)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, mf := range mfs {
		if len(mf.GetMetric()) > 0 {
			known[mf.GetName()] = true
		}
	}
	series, err := DashboardSeries(examples.GrafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) < 10 {
		t.Fatalf("the dashboard queries only %v", series)
	}
	for _, s := range series {
		if Family(s, known) == "" {
			t.Errorf("the dashboard queries %s, which podvisor does not expose", s)
		}
	}
}
