package metrics

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/internal/stats"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/probes"
	"github.com/podvisor/podvisor/status"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Store is what Metrics reads of the status store; *status.Store is one.
type Store interface {
	// Pods returns copies of the pods.
	Pods() []v1.Pod
	// Watch delivers the changes to the pods after version since.
	Watch(ctx context.Context, since uint64) (<-chan status.PodChange, error)
}

var _ Store = (*status.Store)(nil)

// Options configures New.
type Options struct {
	// Store holds the pods. Required.
	Store Store
	// CgroupRoot is where the cgroup hierarchies are mounted;
	// /sys/fs/cgroup when empty.
	CgroupRoot string
	// CgroupParent is the supervisor's cgroup parent: a container's
	// cgroup is <parent>/pod<uid>/<container id>. "podvisor" when empty.
	CgroupParent string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Metrics is podvisor's registry and the instruments that count what
// happens between scrapes.
type Metrics struct {
	reg    *prometheus.Registry
	store  Store
	cg     stats.Reader
	parent string
	now    func() time.Time
	since  time.Time // pods first seen before this are not new starts

	probeTotal       *prometheus.CounterVec
	probeDuration    *prometheus.HistogramVec
	manifestInvalid  prometheus.Gauge
	manifestRejected prometheus.Counter
	podStart         prometheus.Histogram
	imports          *prometheus.CounterVec
	importDuration   prometheus.Histogram

	mu         sync.Mutex
	lastErrors map[string]string // by manifest path, its errors' text in the last snapshot
}

// Probe result label values, kubelet's (pkg/kubelet/prober/prober_manager.go).
const (
	resultSuccessful = "successful"
	resultFailed     = "failed"
	resultUnknown    = "unknown"
)

// New returns Metrics with every series registered on a registry of its
// own, Go's and the process's collectors included.
func New(o Options) *Metrics {
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.CgroupParent == "" {
		o.CgroupParent = "podvisor"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Metrics{
		reg:        prometheus.NewRegistry(),
		store:      o.Store,
		cg:         stats.NewReader(o.CgroupRoot),
		parent:     o.CgroupParent,
		now:        o.Now,
		since:      o.Now(),
		lastErrors: map[string]string{},
		probeTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podvisor_prober_probe_total",
			Help: "Cumulative number of liveness, readiness and startup probe runs by result (successful, failed, unknown: the run errored), as kubelet's prober_probe_total.",
		}, []string{"probe_type", "result", "namespace", "pod", "container"}),
		probeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "podvisor_prober_probe_duration_seconds",
			Help:    "Duration in seconds of a probe run, retries of an erroring run included, as kubelet's prober_probe_duration_seconds.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"probe_type", "namespace", "pod", "container"}),
		manifestInvalid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podvisor_manifest_files_invalid",
			Help: "Number of manifest files that currently fail to parse or validate (their pods, if any, keep their last good version).",
		}),
		manifestRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podvisor_manifest_rejected_total",
			Help: "Cumulative number of manifest file versions rejected: a file that became invalid, or whose errors changed.",
		}),
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "podvisor_pod_start_duration_seconds",
			Help: "Duration in seconds from podvisor seeing a pod's manifest to all its containers having started, once per pod instance, as kubelet's pod_start_duration_seconds.",
			// kubelet's buckets (pkg/kubelet/metrics/metrics.go).
			Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}),
		imports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podvisor_image_imports_total",
			Help: "Cumulative number of image archive imports from the images directory by result (success, failure).",
		}, []string{"result"}),
		importDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "podvisor_image_import_duration_seconds",
			Help:    "Duration in seconds of an image archive import, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.probeTotal, m.probeDuration, m.manifestInvalid, m.manifestRejected,
		m.podStart, m.imports, m.importDuration,
		podCollector{m},
	)
	// Both results exist from the start, so that a rate over them is 0
	// rather than absent before the first import.
	m.imports.WithLabelValues("success")
	m.imports.WithLabelValues("failure")
	return m
}

// Registry returns the registry to serve (promhttp.HandlerFor) or gather.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ProbeRun counts one probe run; it is a probes.Options.OnRun.
func (m *Metrics) ProbeRun(r probes.Run) {
	result := resultUnknown
	switch r.Result {
	case probes.Success:
		result = resultSuccessful
	case probes.Failure:
		result = resultFailed
	}
	container := ""
	if r.Target.Container != nil {
		container = r.Target.Container.Name
	}
	kind := r.Kind.String()
	m.probeTotal.WithLabelValues(kind, result, r.Target.Namespace, r.Target.PodName, container).Inc()
	m.probeDuration.WithLabelValues(kind, r.Target.Namespace, r.Target.PodName, container).Observe(r.Duration.Seconds())
}

// ObserveSnapshot counts a manifest snapshot's invalid files; Metrics is
// a manifest.Observer.
func (m *Metrics) ObserveSnapshot(snap manifest.Snapshot) {
	now := make(map[string]string, len(snap.Errors))
	for _, e := range snap.Errors {
		now[e.Path] += e.Error() + "\n"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for path, text := range now {
		if m.lastErrors[path] != text {
			m.manifestRejected.Inc()
		}
	}
	m.lastErrors = now
	m.manifestInvalid.Set(float64(len(now)))
}

// Importer imports an image archive; images.Importer is one.
type Importer interface {
	Import(ctx context.Context, name string, archive io.Reader) ([]string, error)
}

// Importer returns next, with each import counted and timed. An import
// interrupted by ctx (podvisor stopping) is not counted.
func (m *Metrics) Importer(next Importer) Importer { return countingImporter{next: next, m: m} }

type countingImporter struct {
	next Importer
	m    *Metrics
}

func (c countingImporter) Import(ctx context.Context, name string, archive io.Reader) ([]string, error) {
	start := c.m.now()
	imgs, err := c.next.Import(ctx, name, archive)
	if ctx.Err() != nil {
		return imgs, err
	}
	c.m.importDuration.Observe(c.m.now().Sub(start).Seconds())
	result := "success"
	if err != nil {
		result = "failure"
	}
	c.m.imports.WithLabelValues(result).Inc()
	return imgs, err
}

// WatchStarts observes podvisor_pod_start_duration_seconds for every pod
// that podvisor saw after New and whose containers have all started, once
// per pod instance (UID), until ctx is done. Pods already known before New
// (adopted after a restart of podvisor) are not new starts. A pod removed
// from the store takes its probe series with it (podvisor_prober_probe_*),
// as kubelet's prober deletes them with the pod: a box that runs for years
// must not keep a series for every pod it ever ran.
func (m *Metrics) WatchStarts(ctx context.Context) error {
	ch, err := m.store.Watch(ctx, 0)
	if err != nil {
		return err
	}
	observed := map[string]bool{}
	for c := range ch {
		uid := string(c.Pod.UID)
		if c.Type == watch.Deleted {
			delete(observed, uid)
			m.forgetProbes(c.Pod.Namespace, c.Pod.Name)
			continue
		}
		if observed[uid] {
			continue
		}
		if d, ok := startLatency(c.Pod, m.since); ok {
			observed[uid] = true
			m.podStart.Observe(d.Seconds())
		}
	}
	return nil
}

// forgetProbes deletes the probe series of pod namespace/name.
func (m *Metrics) forgetProbes(namespace, name string) {
	match := prometheus.Labels{"namespace": namespace, "pod": name}
	m.probeTotal.DeletePartialMatch(match)
	m.probeDuration.DeletePartialMatch(match)
}

// startLatency is how long the pod took from its creation (podvisor seeing
// its manifest) to the first start of its last app container to start; ok
// is false while some container has not started yet, and for a pod created
// before since.
func startLatency(pod *v1.Pod, since time.Time) (time.Duration, bool) {
	created := pod.CreationTimestamp.Time
	if created.IsZero() || created.Before(since) || len(pod.Spec.Containers) == 0 {
		return 0, false
	}
	var last time.Time
	for _, c := range pod.Spec.Containers {
		first, ok := firstStart(pod.Status.ContainerStatuses, c.Name)
		if !ok {
			return 0, false
		}
		if first.After(last) {
			last = first
		}
	}
	return max(last.Sub(created), 0), true
}

// firstStart is the earliest start of container name that its status
// still tells: the previous run's when there is one.
func firstStart(statuses []v1.ContainerStatus, name string) (time.Time, bool) {
	for _, cs := range statuses {
		if cs.Name != name {
			continue
		}
		var t time.Time
		switch {
		case cs.State.Running != nil:
			t = cs.State.Running.StartedAt.Time
		case cs.State.Terminated != nil:
			t = cs.State.Terminated.StartedAt.Time
		}
		if t.IsZero() {
			return t, false
		}
		if prev := cs.LastTerminationState.Terminated; prev != nil && !prev.StartedAt.IsZero() && prev.StartedAt.Time.Before(t) {
			t = prev.StartedAt.Time
		}
		return t, true
	}
	return time.Time{}, false
}

// containerCgroup is container id's cgroup in pod uid, as supervise makes it.
func (m *Metrics) containerCgroup(uid, id string) string {
	return layout.ContainerCgroup(m.parent, uid, id)
}

// runningID returns the containerd ID of a running container, or "".
func runningID(cs v1.ContainerStatus) string {
	if cs.State.Running == nil {
		return ""
	}
	_, id, ok := strings.Cut(cs.ContainerID, "://")
	if !ok {
		return ""
	}
	return id
}

var _ manifest.Observer = (*Metrics)(nil)
