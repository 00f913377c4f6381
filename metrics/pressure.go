package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	nodePressureDesc = prometheus.NewDesc("podvisor_node_pressure",
		"Whether a node pressure condition (MemoryPressure, DiskPressure, PIDPressure) is True (1) or False (0).",
		[]string{"condition"}, nil)
	signalAvailableDesc = prometheus.NewDesc("podvisor_eviction_signal_available",
		"What is available of an eviction signal as last measured: bytes for memory.available, nodefs.available and imagefs.available, inodes for *.inodesFree, pids for pid.available.",
		[]string{"signal"}, nil)
	signalCapacityDesc = prometheus.NewDesc("podvisor_eviction_signal_capacity",
		"The capacity an eviction signal's percentage thresholds are of, in the signal's unit.",
		[]string{"signal"}, nil)
)

// NodePressure is what the node pressure series show.
type NodePressure struct {
	// Conditions are the pressure conditions, by type, true when True.
	Conditions map[string]bool
	// Signals are the measured signals, by name.
	Signals map[string]SignalValue
}

// SignalValue is one eviction signal as measured.
type SignalValue struct{ Available, Capacity uint64 }

// WatchPressure adds the node pressure series, read from f at each
// scrape, and podvisor_evictions_total; it returns the function that
// counts an eviction for a signal ("" for a local storage limit).
func (m *Metrics) WatchPressure(f func() NodePressure) (evicted func(signal string)) {
	evictions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podvisor_evictions_total",
		Help: "Number of pods evicted, by eviction signal (\"\" for a pod over its local storage limits), as kubelet_evictions.",
	}, []string{"signal"})
	m.reg.MustRegister(pressureCollector{f}, evictions)
	return func(signal string) { evictions.WithLabelValues(signal).Inc() }
}

type pressureCollector struct{ f func() NodePressure }

func (c pressureCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- nodePressureDesc
	ch <- signalAvailableDesc
	ch <- signalCapacityDesc
}

func (c pressureCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.f()
	for cond, on := range p.Conditions {
		v := 0.0
		if on {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(nodePressureDesc, prometheus.GaugeValue, v, cond)
	}
	for sig, s := range p.Signals {
		ch <- prometheus.MustNewConstMetric(signalAvailableDesc, prometheus.GaugeValue, float64(s.Available), sig)
		ch <- prometheus.MustNewConstMetric(signalCapacityDesc, prometheus.GaugeValue, float64(s.Capacity), sig)
	}
}
