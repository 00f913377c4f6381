package probes

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Options configure a Manager. Every field is optional.
type Options struct {
	// Exec runs exec probes; without it they error.
	Exec Execer
	// Clock is the time source; the wall clock by default.
	Clock clock.Clock
	// Rand returns a jitter in [0, n) for the first run of a probe
	// without initialDelaySeconds, or of one already due when the
	// container was added and whose container started before the Manager
	// (one adopted after a restart); values outside are clamped.
	// Uniformly random by default.
	Rand func(n time.Duration) time.Duration
	// OnEvent receives each event, in order, from one goroutine.
	OnEvent func(Event)
	// OnChange receives each result change, in order, from the same
	// goroutine as OnEvent. Callbacks may call the Manager.
	OnChange func(Change)
	// OnRun, when set, hears every run of a probe with its result and how
	// long it took (for metrics). It is called with the Manager's lock held:
	// it must be quick and must not call the Manager.
	OnRun func(Run)
	// Transport carries HTTP probes; a shared transport like kubelet's
	// (no certificate verification, no keep-alives, no proxy) by default.
	Transport http.RoundTripper
	// Log receives per-run detail at Debug and result changes at Info.
	Log *slog.Logger
}

// Manager runs the startup, readiness and liveness probes of the
// container instances added to it, one worker goroutine per probe.
type Manager struct {
	clock clock.Clock
	// start is when the Manager was made: a container started before it
	// was running when podvisor came up (adopted).
	start  time.Time
	jitter func(time.Duration) time.Duration
	runner runner
	log    *slog.Logger
	on     struct {
		event  func(Event)
		change func(Change)
		run    func(Run)
	}

	// ctx is the parent of every worker's context: workers outlive any
	// caller's context and end with Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // workers

	mu          sync.Mutex
	closed      bool
	instances   map[key]*instance
	terminating map[string]bool
	queue       []notice // for the dispatcher, in decision order

	// spawn runs a new worker; tests replace it to step workers by hand.
	spawn func(*worker)

	wake        chan struct{}
	quit        chan struct{}
	done        chan struct{} // dispatcher ended
	dispatching bool
	closeOnce   sync.Once
}

type key struct{ pod, container string }

// instance is the probes of one container instance.
type instance struct {
	t      Target
	probes map[Kind]*probeState // the probes the container has
}

// probeState is one probe of an instance. Guarded by Manager.mu.
type probeState struct {
	spec    *v1.Probe // defaulted
	result  Result    // after thresholds
	last    Result    // last run
	message string    // last run's output or error
	failure string    // last failed run's output
	at      time.Time // last run
	worker  *worker   // nil when not probing
}

// notice is an event or a change waiting for the dispatcher.
type notice struct {
	key         key
	containerID string
	event       *Event
	change      *Change
}

// NewManager returns a Manager; Close stops it.
func NewManager(o Options) *Manager {
	tr := o.Transport
	if tr == nil {
		tr = sharedTransport()
	}
	m := newManager(o, &prober{exec: o.Exec, transport: tr})
	m.dispatching = true
	go m.dispatch()
	return m
}

// newManager returns a Manager that has started nothing: NewManager starts
// its dispatcher, tests may instead take notices with pop.

func newManager(o Options, r runner) *Manager {
	m := &Manager{
		clock:       o.Clock,
		jitter:      o.Rand,
		runner:      r,
		log:         o.Log,
		instances:   map[key]*instance{},
		terminating: map[string]bool{},
		wake:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	m.on.event, m.on.change, m.on.run = o.OnEvent, o.OnChange, o.OnRun
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	m.start = m.clock.Now()
	if m.jitter == nil {
		m.jitter = func(n time.Duration) time.Duration { return rand.N(n) }
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.spawn = func(w *worker) {
		m.wg.Add(1)
		go w.run()
	}
	return m
}

// initialResult is a probe's result before it has run past a threshold:
// not ready until proven ready, never killed for a probe that has not run,
// neither started nor failed.
func initialResult(k Kind) Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Add starts probing a container instance: its startup probe, or, without
// one (or with seed.Started), its readiness and liveness probes. Workers
// of an older ContainerID of the same pod and container are stopped and
// their results forgotten. Adding the same ContainerID again only updates
// the target (a pod IP learnt late).
func (m *Manager) Add(t Target, seed Seed) {
	if t.Container == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	k := key{t.PodUID, t.Container.Name}
	if old := m.instances[k]; old != nil {
		if old.t.ContainerID == t.ContainerID {
			old.t.PodIP, old.t.PodName, old.t.Namespace = t.PodIP, t.PodName, t.Namespace
			return
		}
		m.stopLocked(old)
	}
	inst := &instance{t: t, probes: map[Kind]*probeState{}}
	for _, kind := range kinds {
		if spec := probeSpec(t.Container, kind); spec != nil {
			inst.probes[kind] = &probeState{spec: withDefaults(spec), result: initialResult(kind)}
		}
	}
	if ps := inst.probes[Startup]; ps != nil && seed.Started {
		ps.result = Success
	}
	if ps := inst.probes[Readiness]; ps != nil && seed.Ready {
		ps.result = Success
	}
	m.instances[k] = inst
	m.log.Debug("probing container", "pod", t.PodName, "uid", t.PodUID, "container", t.Container.Name, "containerID", t.ContainerID)
	if m.terminating[t.PodUID] {
		return
	}
	if ps := inst.probes[Startup]; ps != nil && ps.result != Success {
		m.startLocked(inst, Startup, true)
		return
	}
	m.startLocked(inst, Readiness, true)
	m.startLocked(inst, Liveness, true)
}

// startLocked starts the worker of one probe of inst, if it has the probe.
// Its first run is due initialDelaySeconds after the container started, on
// time (the API's words; kubelet runs it at the first tick, after that, of
// a period that began when its worker did), or now if that is past. When
// asked, a jitter within one period spreads two kinds of first runs: those
// without an initial delay (kubelet's first run then comes within a period
// of the start too, never at its instant, when no server in the container
// listens yet: a liveness probe with failureThreshold 1 would kill it), and
// the overdue ones of a container that started before the Manager, one
// adopted after a restart, so that a restarted podvisor does not probe all
// its containers at once (kubelet jitters its workers while it started less
// than a period ago). The probes a passed startup probe starts are not
// jittered: kubelet runs readiness right after a startup result changes, so
// a started container is not kept from Ready for up to a period.
func (m *Manager) startLocked(inst *instance, kind Kind, jitter bool) {
	ps := inst.probes[kind]
	if ps == nil || ps.worker != nil {
		return
	}
	w := &worker{m: m, inst: inst, kind: kind, spec: ps.spec, first: m.firstRun(inst.t, ps.spec, jitter)}
	w.ctx, w.cancel = context.WithCancel(m.ctx)
	ps.worker = w
	m.spawn(w)
}

// firstRun is when the first run of spec against t is due (see
// startLocked).
func (m *Manager) firstRun(t Target, spec *v1.Probe, jitter bool) time.Time {
	first := t.StartedAt.Add(seconds(spec.InitialDelaySeconds))
	now := m.clock.Now()
	overdue := first.Before(now)
	if overdue {
		first = now
	}
	if !jitter || (spec.InitialDelaySeconds > 0 && !(overdue && t.StartedAt.Before(m.start))) {
		return first
	}
	period := seconds(spec.PeriodSeconds)
	return first.Add(min(max(m.jitter(period), 0), period-1))
}

// stopLocked stops every worker of inst.
func (m *Manager) stopLocked(inst *instance) {
	for _, ps := range inst.probes {
		if ps.worker != nil {
			ps.worker.cancel()
			ps.worker = nil
		}
	}
}

// Remove stops probing the container (whichever instance) and forgets it.
func (m *Manager) Remove(podUID, container string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key{podUID, container}
	if inst := m.instances[k]; inst != nil {
		m.stopLocked(inst)
		delete(m.instances, k)
	}
}

// RemovePod stops probing every container of the pod and forgets them and
// that the pod was terminating.
func (m *Manager) RemovePod(podUID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, inst := range m.instances {
		if k.pod == podUID {
			m.stopLocked(inst)
			delete(m.instances, k)
		}
	}
	delete(m.terminating, podUID)
}

// Terminating marks the pod as stopping: its containers are no longer
// ready (a readiness result of Success becomes Failure, told by OnChange)
// and no probe of it runs again, so none can kill a container that is
// being stopped anyway. Containers added to it later are not probed.
func (m *Manager) Terminating(podUID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.terminating[podUID] {
		return
	}
	m.terminating[podUID] = true
	for k, inst := range m.instances {
		if k.pod != podUID {
			continue
		}
		m.stopLocked(inst)
		if ps := inst.probes[Readiness]; ps != nil {
			m.setLocked(inst, Readiness, ps, Failure, "")
		}
	}
}

// Status returns what the probes say about the container's current
// instance; the zero Status when none was added.
func (m *Manager) Status(podUID, container string) Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	inst := m.instances[key{podUID, container}]
	if inst == nil {
		return Status{}
	}
	st := Status{ContainerID: inst.t.ContainerID, Probes: map[Kind]ProbeStatus{}}
	for kind, ps := range inst.probes {
		st.Probes[kind] = ProbeStatus{Result: ps.result, Last: ps.last, Message: ps.message, Time: ps.at}
	}
	st.Started = inst.probes[Startup] == nil || inst.probes[Startup].result == Success
	ready := inst.probes[Readiness] == nil || inst.probes[Readiness].result == Success
	st.Ready = st.Started && ready && !m.terminating[podUID]
	return st
}

// Close stops every worker and the callbacks, and waits for them.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		for _, inst := range m.instances {
			m.stopLocked(inst)
		}
		m.instances = map[key]*instance{}
		m.queue = nil
		m.mu.Unlock()
		m.cancel()
		m.wg.Wait()
		close(m.quit)
		if m.dispatching {
			<-m.done
		}
	})
}

// target returns a copy of w's target, and false when w is no longer the
// worker of its probe.
func (m *Manager) target(w *worker) (Target, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return w.inst.t, m.currentLocked(w)
}

func (m *Manager) currentLocked(w *worker) bool {
	ps := w.inst.probes[w.kind]
	return !m.closed && ps.worker == w && m.instances[key{w.inst.t.PodUID, w.inst.t.Container.Name}] == w.inst
}

// record keeps one run of w's probe and applies kubelet's thresholds and
// verdicts (kubelet's worker.doProbe). It reports whether w goes on.
func (m *Manager) record(w *worker, o outcome, out string, err error) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.currentLocked(w) {
		return false
	}
	ps := w.inst.probes[w.kind]
	r, counts, ev := w.notice(o, out, err)
	if m.on.run != nil {
		m.on.run(Run{Target: w.inst.t, Kind: w.kind, Result: r, Duration: w.took})
	}
	ps.last, ps.message, ps.at = r, out, m.clock.Now()
	if err != nil {
		ps.message = err.Error()
	}
	if r == Failure {
		ps.failure = out
	}
	m.log.Debug("probe ran", "pod", w.inst.t.PodName, "uid", w.inst.t.PodUID, "container", w.inst.t.Container.Name,
		"probe", w.kind, "outcome", o, "output", ps.message)
	if ev != nil {
		m.postLocked(notice{key: key{ev.PodUID, ev.Container}, containerID: ev.ContainerID, event: ev})
	}
	if !counts || !w.observe(r) {
		return true
	}
	m.setLocked(w.inst, w.kind, ps, r, ps.failure)
	switch {
	case w.kind == Startup:
		// Answered either way: started (readiness and liveness begin) or
		// doomed (the container is killed).
		ps.worker = nil
		if r == Success {
			m.startLocked(w.inst, Readiness, false)
			m.startLocked(w.inst, Liveness, false)
		}
		return false
	case w.kind == Liveness && r == Failure:
		// The container is killed; no more runs against it, and no second
		// kill request, until a new instance is added.
		ps.worker = nil
		return false
	}
	return true
}

// setLocked sets a probe's result, telling a change; message is the
// failure's (empty when no run failed: a terminating pod).
func (m *Manager) setLocked(inst *instance, kind Kind, ps *probeState, r Result, message string) {
	if ps.result == r {
		return
	}
	ps.result = r
	c := &Change{PodUID: inst.t.PodUID, Container: inst.t.Container.Name, ContainerID: inst.t.ContainerID, Kind: kind, Result: r}
	if r == Failure {
		c.Message = message
	}
	m.log.Info("probe result changed", "pod", inst.t.PodName, "uid", inst.t.PodUID, "container", c.Container,
		"probe", kind, "result", r, "message", c.Message)
	m.postLocked(notice{key: key{c.PodUID, c.Container}, containerID: c.ContainerID, change: c})
}

func (m *Manager) postLocked(n notice) {
	m.queue = append(m.queue, n)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// dispatch delivers notices in order, outside the lock, so callbacks may
// call the Manager. A notice about an instance that was removed or
// replaced meanwhile is dropped.
func (m *Manager) dispatch() {
	defer close(m.done)
	for {
		select {
		case <-m.quit:
			return
		case <-m.wake:
		}
		for {
			n, ok := m.pop()
			if !ok {
				break
			}
			if n.event != nil && m.on.event != nil {
				m.on.event(*n.event)
			}
			if n.change != nil && m.on.change != nil {
				m.on.change(*n.change)
			}
		}
	}
}

func (m *Manager) pop() (notice, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.queue) > 0 {
		n := m.queue[0]
		m.queue[0] = notice{}
		m.queue = m.queue[1:]
		if inst := m.instances[n.key]; inst != nil && inst.t.ContainerID == n.containerID {
			return n, true
		}
	}
	return notice{}, false
}
