package probes

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// worker runs one probe of one container instance, on its own goroutine,
// until it is stopped or its probe reaches a verdict that ends it:
//
//	created ──first delay──▶ probing ──period──▶ probing ...
//	   (at StartedAt + initialDelaySeconds, or now if that is past; without
//	    a delay, or overdue for an adopted container, within one period)
//	probing ──startup passed──▶ done (readiness and liveness workers start)
//	probing ──startup or liveness failed──▶ done (held: the container is
//	                                        killed, a new ContainerID gets
//	                                        new workers)
//	any ──Remove, RemovePod, Terminating, Close, newer ContainerID──▶ done
//
// Its loop is thin around doProbe, which tests call directly.
type worker struct {
	m    *Manager
	inst *instance
	kind Kind
	spec *v1.Probe // defaulted

	ctx    context.Context
	cancel context.CancelFunc

	// first is when the first run is due.
	first time.Time

	// lastResult and resultRun are kubelet's threshold counters: the last
	// run's result and how many runs in a row returned it. Guarded by m.mu.
	lastResult Result
	resultRun  int

	// took is how long the last run took, retries included; only the
	// worker's goroutine writes it, before record reads it.
	took time.Duration
}

// run probes until the worker is done.
func (w *worker) run() {
	defer w.m.wg.Done()
	defer w.cancel()
	period := seconds(w.spec.PeriodSeconds)
	next := w.first
	for w.sleepUntil(next) && w.doProbe() {
		// A ticker's schedule: a run that overran its period is followed
		// by the next at once, then the schedule goes on from there.
		next = next.Add(period)
		if now := w.m.clock.Now(); next.Before(now) {
			next = now
		}
	}
}

// sleepUntil waits for t, reporting whether the worker should go on.
func (w *worker) sleepUntil(t time.Time) bool {
	d := t.Sub(w.m.clock.Now())
	if d <= 0 {
		return w.ctx.Err() == nil
	}
	timer := w.m.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-timer.C():
		return true
	}
}

// doProbe runs the probe once (again at once, up to three times, while it
// errors) and records what it said. It reports whether the worker should
// go on.
func (w *worker) doProbe() bool {
	t, ok := w.m.target(w)
	if !ok {
		return false
	}
	var (
		o   outcome
		out string
		err error
	)
	start := w.m.clock.Now()
	for range maxProbeRetries {
		o, out, err = w.m.runner.run(w.ctx, w.kind, w.spec, t)
		if err == nil || w.ctx.Err() != nil {
			break
		}
	}
	w.took = w.m.clock.Since(start)
	if w.ctx.Err() != nil {
		// Stopped while probing: whatever the run said is about a
		// container nobody asks about any more.
		return false
	}
	return w.m.record(w, o, out, err)
}

// observe counts r into the threshold counters and reports whether the
// result is to be set: only after failureThreshold failures or
// successThreshold successes in a row.
func (w *worker) observe(r Result) bool {
	if r == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = r, 1
	}
	if r == Failure {
		return w.resultRun >= int(w.spec.FailureThreshold)
	}
	return w.resultRun >= int(w.spec.SuccessThreshold)
}

// notice turns a run into what it tells: the run's result and, for a
// failed, errored or warned run, kubelet's event (kubelet's prober.probe).
// A run that errored has no result: it does not count.
func (w *worker) notice(o outcome, out string, err error) (r Result, counts bool, ev *Event) {
	event := func(reason, format string, args ...any) *Event {
		return &Event{
			PodUID: w.inst.t.PodUID, Container: w.inst.t.Container.Name, ContainerID: w.inst.t.ContainerID,
			Kind: w.kind, Type: EventWarning, Reason: reason, Message: fmt.Sprintf(format, args...),
		}
	}
	switch {
	case err != nil:
		return Unknown, false, event(ReasonUnhealthy, "%s probe errored and resulted in %s state: %s", w.kind, o, err)
	case o == outSuccess:
		return Success, true, nil
	case o == outWarning:
		return Success, true, event(ReasonProbeWarning, "%s probe warning: %s", w.kind, out)
	case o == outFailure:
		return Failure, true, event(ReasonUnhealthy, "%s probe failed: %s", w.kind, out)
	}
	// kubelet counts an unknown outcome without an error as a failure,
	// without an event.
	return Failure, true, nil
}
