package api

import (
	"net/http"
	"time"

	"github.com/podvisor/podvisor/internal/stats"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// readNodeUsage reads the machine's use; a test replaces it.
var readNodeUsage = func() (stats.NodeUsage, error) { return stats.ReadNode("/proc") }

// registerKubeletStats adds GET /stats/summary and GET /metrics/resource,
// both from o.Stats (without it they answer 501).
func registerKubeletStats(mux *http.ServeMux, o Options) {
	mux.HandleFunc("GET /stats/summary", func(w http.ResponseWriter, r *http.Request) {
		if o.Stats == nil {
			writeStatus(w, http.StatusNotImplemented, metav1.StatusReasonBadRequest, "", "this podvisor measures no stats")
			return
		}
		sum, _ := kubeletSummary(o)
		writeJSON(w, http.StatusOK, sum)
	})
	mux.HandleFunc("GET /metrics/resource", func(w http.ResponseWriter, r *http.Request) {
		if o.Stats == nil {
			writeStatus(w, http.StatusNotImplemented, metav1.StatusReasonBadRequest, "", "this podvisor measures no stats")
			return
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(resourceCollector{o: o})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorLog:      promErrorLog{o},
			ErrorHandling: promhttp.ContinueOnError,
			Timeout:       scrapeTimeout,
		}).ServeHTTP(w, r)
	})
}

// kubeletSummary is kubelet's summary API from what podvisor measures:
// the node's and each running container's CPU time and working set, the
// pods' as their containers' sums, the start times. Fields it does not
// measure (network, filesystems, volumes, rates such as usageNanoCores)
// stay empty. failed is true when a figure could not be read (the node's;
// a container whose cgroup is gone between listing and reading simply has
// none).
func kubeletSummary(o Options) (sum statsapi.Summary, failed bool) {
	cur := o.Stats.Stats()
	pods := o.Store.Pods()
	if o.Node != nil {
		n := o.Node.Node()
		sum.Node.NodeName, sum.Node.StartTime = n.Name, metav1.NewTime(n.StartTime)
	}
	if sum.Node.NodeName == "" && len(pods) > 0 {
		sum.Node.NodeName = pods[0].Spec.NodeName
	}
	if u, err := readNodeUsage(); err != nil {
		failed = true
		if o.Log != nil {
			o.Log.Warn("read node usage", "err", err)
		}
	} else {
		t := metav1.NewTime(cur.Time)
		sum.Node.CPU = &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(u.CPUNanos)}
		sum.Node.Memory = &statsapi.MemoryStats{Time: t, WorkingSetBytes: ptr(u.WorkingSet), UsageBytes: ptr(u.Usage), AvailableBytes: ptr(u.Available)}
	}
	byUID := make(map[string]*v1.Pod, len(pods))
	for i := range pods {
		byUID[string(pods[i].UID)] = &pods[i]
	}
	sum.Pods = make([]statsapi.PodStats, 0, len(cur.Pods))
	for _, p := range cur.Pods {
		ps := statsapi.PodStats{
			PodRef:     statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Containers: []statsapi.ContainerStats{},
		}
		pod := byUID[p.UID]
		if pod != nil && pod.Status.StartTime != nil {
			ps.StartTime = *pod.Status.StartTime
		}
		var cpu, mem uint64
		var at time.Time
		for _, c := range p.Containers {
			if c.CPU == nil || c.Memory == nil {
				continue // not running, or its cgroup could not be read
			}
			cs := statsapi.ContainerStats{
				Name:   c.Name,
				CPU:    &statsapi.CPUStats{Time: metav1.NewTime(c.CPU.Time), UsageCoreNanoSeconds: ptr(c.CPU.UsageCoreNanoSeconds)},
				Memory: &statsapi.MemoryStats{Time: metav1.NewTime(c.Memory.Time), WorkingSetBytes: ptr(c.Memory.WorkingSetBytes)},
			}
			if pod != nil {
				if st := containerStatusOf(pod, c.Name); st != nil && st.State.Running != nil {
					cs.StartTime = st.State.Running.StartedAt
				}
			}
			cpu += c.CPU.UsageCoreNanoSeconds
			mem += c.Memory.WorkingSetBytes
			if c.CPU.Time.After(at) {
				at = c.CPU.Time
			}
			ps.Containers = append(ps.Containers, cs)
		}
		if len(ps.Containers) > 0 {
			ps.CPU = &statsapi.CPUStats{Time: metav1.NewTime(at), UsageCoreNanoSeconds: ptr(cpu)}
			ps.Memory = &statsapi.MemoryStats{Time: metav1.NewTime(at), WorkingSetBytes: ptr(mem)}
		}
		sum.Pods = append(sum.Pods, ps)
	}
	return sum, failed
}

func ptr[T any](v T) *T { return &v }

// Kubelet's resource metrics (pkg/kubelet/metrics/collectors), with its
// names, help (component-base prefixes the stability level) and labels.
var (
	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"[STABLE] Current working set of the node in bytes", nil, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"[STABLE] Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"[STABLE] Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"[STABLE] Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"[ALPHA] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// resourceCollector is GET /metrics/resource's one scrape: kubelet's
// summary as its resource metrics collector turns it into samples, each
// usage with the time it was measured.
type resourceCollector struct{ o Options }

func (resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemDesc, containerCPUDesc, containerMemDesc,
		containerStartDesc, podCPUDesc, podMemDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

func (c resourceCollector) Collect(ch chan<- prometheus.Metric) {
	sum, failed := kubeletSummary(c.o)
	var errs float64
	if failed {
		errs = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, errs)
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, errs)
	at := func(t metav1.Time, m prometheus.Metric) prometheus.Metric {
		return prometheus.NewMetricWithTimestamp(t.Time, m)
	}
	if n := sum.Node; n.CPU != nil {
		ch <- at(n.CPU.Time, prometheus.MustNewConstMetric(nodeCPUDesc, prometheus.CounterValue, seconds(*n.CPU.UsageCoreNanoSeconds)))
		ch <- at(n.Memory.Time, prometheus.MustNewConstMetric(nodeMemDesc, prometheus.GaugeValue, float64(*n.Memory.WorkingSetBytes)))
	}
	for _, p := range sum.Pods {
		name, ns := p.PodRef.Name, p.PodRef.Namespace
		for _, c := range p.Containers {
			if !c.StartTime.IsZero() {
				ch <- prometheus.MustNewConstMetric(containerStartDesc, prometheus.GaugeValue,
					float64(c.StartTime.UnixNano())/float64(time.Second), c.Name, name, ns)
			}
			ch <- at(c.CPU.Time, prometheus.MustNewConstMetric(containerCPUDesc, prometheus.CounterValue, seconds(*c.CPU.UsageCoreNanoSeconds), c.Name, name, ns))
			ch <- at(c.Memory.Time, prometheus.MustNewConstMetric(containerMemDesc, prometheus.GaugeValue, float64(*c.Memory.WorkingSetBytes), c.Name, name, ns))
		}
		if p.CPU != nil {
			ch <- at(p.CPU.Time, prometheus.MustNewConstMetric(podCPUDesc, prometheus.CounterValue, seconds(*p.CPU.UsageCoreNanoSeconds), name, ns))
			ch <- at(p.Memory.Time, prometheus.MustNewConstMetric(podMemDesc, prometheus.GaugeValue, float64(*p.Memory.WorkingSetBytes), name, ns))
		}
	}
}

func seconds(nanos uint64) float64 { return float64(nanos) / float64(time.Second) }
