package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
)

var (
	podsDesc = prometheus.NewDesc("podvisor_pods",
		"Number of pods podvisor supervises, by phase.", []string{"phase"}, nil)
	restartsDesc = prometheus.NewDesc("podvisor_container_restarts_total",
		"Number of times a container has been restarted, from its status (restartCount).",
		[]string{"namespace", "pod", "container"}, nil)
	cpuDesc = prometheus.NewDesc("podvisor_container_cpu_usage_seconds_total",
		"Cumulative CPU time of a running container instance in seconds, from its cgroup.",
		[]string{"namespace", "pod", "container"}, nil)
	memoryDesc = prometheus.NewDesc("podvisor_container_memory_working_set_bytes",
		"Working set of a running container in bytes (memory in use minus inactive file cache), from its cgroup.",
		[]string{"namespace", "pod", "container"}, nil)
)

// phases are every pod phase, so that each has a series, 0 when no pod is in it.
var phases = []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown}

// podCollector computes the per-pod series at scrape time from the store's
// pods and the containers' cgroups.
type podCollector struct{ m *Metrics }

func (c podCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{podsDesc, restartsDesc, cpuDesc, memoryDesc} {
		ch <- d
	}
}

func (c podCollector) Collect(ch chan<- prometheus.Metric) {
	pods := c.m.store.Pods()
	byPhase := map[v1.PodPhase]int{}
	for i := range pods {
		p := &pods[i]
		phase := p.Status.Phase
		if phase == "" {
			phase = v1.PodPending
		}
		byPhase[phase]++
		for _, cs := range allStatuses(p) {
			labels := []string{p.Namespace, p.Name, cs.Name}
			ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(cs.RestartCount), labels...)
			id := runningID(cs)
			if id == "" {
				continue
			}
			u, err := c.m.cg.Read(c.m.containerCgroup(string(p.UID), id))
			if err != nil {
				continue // exited since the status was written
			}
			ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, float64(u.CPUNanos)/1e9, labels...)
			ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, float64(u.WorkingSet), labels...)
		}
	}
	for _, ph := range phases {
		ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(byPhase[ph]), string(ph))
	}
}

// allStatuses are a pod's init and app container statuses.
func allStatuses(p *v1.Pod) []v1.ContainerStatus {
	return append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}
