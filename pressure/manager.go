package pressure

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults of the settings, kubelet's.
const (
	DefaultTransitionPeriod   = 5 * time.Minute
	DefaultMonitoringInterval = 10 * time.Second
)

// ImmediateGrace is the grace period of a pod evicted for a hard
// threshold, kubelet's immediateEvictionGracePeriodSeconds.
const ImmediateGrace = time.Second

// Reclaimer frees node-level resources before a pod is evicted.
type Reclaimer interface {
	// ReclaimContainers removes dead containers beyond what status needs.
	ReclaimContainers(ctx context.Context) error
	// ReclaimImages removes unused, unpinned images until bytes are freed
	// or none is left, and returns what it freed.
	ReclaimImages(ctx context.Context, bytes uint64) (freed uint64, err error)
}

// Evicter stops pods for node pressure.
type Evicter interface {
	// Evict stops the pod, its status Failed with reason Evicted and e's
	// message.
	Evict(ctx context.Context, uid types.UID, e Eviction) error
	// SetPressure tells the signals under pressure now (none: the pressure
	// is gone), on every change.
	SetPressure(signals []Signal)
}

// Eviction is why and how a pod is evicted.
type Eviction struct {
	// Signal is the signal under pressure; "" for a pod over its local
	// storage limits.
	Signal  Signal
	Message string
	Grace   time.Duration
}

// UsageSource reads what pods use.
type UsageSource interface {
	// Usage returns the use of pods; disk says whether their disk use is
	// needed (a walk of their emptyDirs and logs), else memory only.
	Usage(ctx context.Context, pods []v1.Pod, disk bool) []PodUsage
}

// Options configures NewManager.
type Options struct {
	Thresholds         []Threshold
	TransitionPeriod   time.Duration // DefaultTransitionPeriod when 0
	MonitoringInterval time.Duration // DefaultMonitoringInterval when 0
	// MaxPodGracePeriod bounds the grace period of a pod evicted for a soft
	// threshold; 0: the pod's own.
	MaxPodGracePeriod time.Duration
	Observer          interface{ Observe() (Observations, error) }
	// Pods returns the pods with their status.
	Pods  func() []v1.Pod
	Usage UsageSource
	// Reclaimer, when set, is tried before any eviction.
	Reclaimer Reclaimer
	// ImagesOnNodeFS is true when the images are on nodefs: nodefs
	// pressure reclaims images too.
	ImagesOnNodeFS bool
	Evicter        Evicter
	Clock          clock.WithTicker
	Log            *slog.Logger
}

// Manager watches the signals and acts on the thresholds met.
type Manager struct {
	o Options
	d decider

	mu     sync.Mutex
	status Status
	told   bool   // SetPressure has been called
	stuck  string // the last "no pod to evict" logged, to log it once
}

// Status is the node pressure at one moment, for the node's views.
type Status struct {
	Time         time.Time
	Conditions   []v1.NodeCondition
	Observations Observations
	Thresholds   []Threshold
	// Met are the thresholds met at Time.
	Met []Threshold
	// Signals are the signals under pressure (transition period
	// included).
	Signals []Signal
}

// NewManager returns a Manager; Run starts it.
func NewManager(o Options) *Manager {
	if o.TransitionPeriod == 0 {
		o.TransitionPeriod = DefaultTransitionPeriod
	}
	if o.MonitoringInterval == 0 {
		o.MonitoringInterval = DefaultMonitoringInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{o: o, d: decider{thresholds: o.Thresholds, transition: o.TransitionPeriod}}
	now := o.Clock.Now()
	m.status = Status{Time: now, Thresholds: o.Thresholds, Conditions: conditions(nil, map[v1.NodeConditionType]bool{}, now)}
	return m
}

// Status returns the last status.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// NodeConditions are the pressure conditions of the last status.
func (m *Manager) NodeConditions() []v1.NodeCondition {
	return slices.Clone(m.Status().Conditions)
}

// Run synchronises every monitoring interval until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := m.o.Clock.NewTicker(m.o.MonitoringInterval)
	defer t.Stop()
	for {
		m.Synchronize(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Synchronize is one round: measure, decide, update the status, and act
// on the thresholds met: reclaim, then evict at most one pod.
func (m *Manager) Synchronize(ctx context.Context) {
	now := m.o.Clock.Now()
	obs, err := m.o.Observer.Observe()
	if err != nil {
		m.o.Log.Debug("node pressure: a signal was not measured", "err", err)
	}
	dec := m.d.step(obs, now)
	m.mu.Lock()
	old := m.status
	m.status = Status{
		Time:         now,
		Conditions:   conditions(old.Conditions, dec.Pressure, now),
		Observations: obs,
		Thresholds:   m.o.Thresholds,
		Met:          dec.Met,
		Signals:      dec.Signals,
	}
	m.mu.Unlock()
	if !m.told || !slices.Equal(old.Signals, dec.Signals) {
		if m.told || len(dec.Signals) > 0 {
			m.o.Log.Info("node pressure changed", "signals", dec.Signals, "thresholdsMet", fmt.Sprint(dec.Met))
		}
		// The first call too: the supervisor starts no evicted pod again
		// before it.
		if m.o.Evicter != nil {
			m.o.Evicter.SetPressure(dec.Signals)
		}
		m.told = true
	}
	if m.o.Evicter == nil {
		return
	}
	if m.localStorage(ctx) {
		return
	}
	if len(dec.Act) == 0 {
		return
	}
	t := dec.Act[0]
	if m.reclaim(ctx, t, obs[t.Signal]) {
		return
	}
	m.evict(ctx, t, dec.Act)
}

// reclaim frees node-level resources for t's signal and reports whether
// that resolved every threshold met.
func (m *Manager) reclaim(ctx context.Context, t Threshold, o Observation) bool {
	if m.o.Reclaimer == nil {
		return false
	}
	var images bool
	switch t.Signal {
	case NodeFsAvailable, NodeFsInodesFree:
		images = m.o.ImagesOnNodeFS
	case ImageFsAvailable, ImageFsInodesFree:
		images = true
	default:
		return false
	}
	if err := m.o.Reclaimer.ReclaimContainers(ctx); err != nil {
		m.o.Log.Warn("node pressure: reclaiming dead containers failed", "signal", t.Signal, "err", err)
	}
	if images {
		var want uint64
		if t.Signal.bytes() {
			want = t.Value.Of(o.Capacity)
			if t.MinReclaim != nil {
				want += t.MinReclaim.Of(o.Capacity)
			}
			want -= min(want, o.Available)
		}
		freed, err := m.o.Reclaimer.ReclaimImages(ctx, want)
		if err != nil {
			m.o.Log.Warn("node pressure: reclaiming unused images failed", "signal", t.Signal, "err", err)
		}
		m.o.Log.Info("node pressure: reclaimed images", "signal", t.Signal, "wanted", want, "freed", freed)
	}
	obs, _ := m.o.Observer.Observe()
	if len(met(m.d.acted, obs, false)) == 0 {
		m.o.Log.Info("node pressure: reclaim resolved the pressure, no pod evicted", "signal", t.Signal)
		return true
	}
	return false
}

// active are the pods that run or may: not Succeeded nor Failed.
func (m *Manager) active() []v1.Pod {
	var out []v1.Pod
	for _, p := range m.o.Pods() {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// evict evicts the first evictable pod in t's ranking.
func (m *Manager) evict(ctx context.Context, t Threshold, act []Threshold) {
	pods := m.active()
	disk := t.Signal != MemoryAvailable && t.Signal != PIDAvailable
	usage := m.o.Usage.Usage(ctx, pods, disk)
	Rank(t.Signal, usage)
	obs := m.Status().Observations[t.Signal]
	for _, u := range usage {
		if !Evictable(u.Pod) {
			continue
		}
		e := Eviction{Signal: t.Signal, Message: message(t, obs, u), Grace: ImmediateGrace}
		if t.Soft {
			e.Grace = podGrace(u.Pod, m.o.MaxPodGracePeriod)
		}
		if m.evictOne(ctx, u.Pod, e) {
			m.stuck = ""
			return
		}
	}
	if stuck := fmt.Sprint(act); stuck != m.stuck {
		m.stuck = stuck
		m.o.Log.Warn("node pressure: no pod to evict", "signal", t.Signal, "thresholds", stuck)
	}
}

func (m *Manager) evictOne(ctx context.Context, pod *v1.Pod, e Eviction) bool {
	m.o.Log.Info("node pressure: evicting pod", "pod", pod.Namespace+"/"+pod.Name, "signal", e.Signal, "grace", e.Grace, "message", e.Message)
	if err := m.o.Evicter.Evict(ctx, pod.UID, e); err != nil {
		m.o.Log.Warn("node pressure: eviction failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return false
	}
	return true
}

// podGrace is the grace period of a soft eviction: the pod's, at most max
// when max is set.
func podGrace(pod *v1.Pod, limit time.Duration) time.Duration {
	g := 30 * time.Second
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		g = time.Duration(*s) * time.Second
	}
	if limit > 0 {
		g = min(g, limit)
	}
	return g
}

// conditions are the pressure conditions as kubelet reports them, each
// keeping its last transition time while its status stays.
func conditions(old []v1.NodeCondition, pressure map[v1.NodeConditionType]bool, now time.Time) []v1.NodeCondition {
	out := make([]v1.NodeCondition, 0, len(Conditions))
	for _, t := range Conditions {
		c := v1.NodeCondition{Type: t, Status: v1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
		texts := conditionTexts[t]
		c.Reason, c.Message = texts[0], texts[1]
		if pressure[t] {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, texts[2], texts[3]
		}
		if i := slices.IndexFunc(old, func(o v1.NodeCondition) bool { return o.Type == t }); i >= 0 && old[i].Status == c.Status {
			c.LastTransitionTime = old[i].LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

// conditionTexts are kubelet's reasons of each condition, False then
// True, with podvisor's messages.
var conditionTexts = map[v1.NodeConditionType][4]string{
	v1.NodeMemoryPressure: {"KubeletHasSufficientMemory", "podvisor has sufficient memory available", "KubeletHasInsufficientMemory", "podvisor has insufficient memory available"},
	v1.NodeDiskPressure:   {"KubeletHasNoDiskPressure", "podvisor has no disk pressure", "KubeletHasDiskPressure", "podvisor has disk pressure"},
	v1.NodePIDPressure:    {"KubeletHasSufficientPID", "podvisor has sufficient PID available", "KubeletHasInsufficientPID", "podvisor has insufficient PID available"},
}
