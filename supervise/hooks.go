package supervise

import (
	"context"
	"time"

	"github.com/podvisor/podvisor/probes"
	v1 "k8s.io/api/core/v1"
)

// probeTarget is one running container as the probes and hooks see it:
// addressed at the pod's IP, the node's with hostNetwork.
func (w *podWorker) probeTarget(pod *v1.Pod, c *v1.Container, id string, startedAt time.Time) probes.Target {
	t := probes.Target{
		PodUID:      string(pod.UID),
		PodName:     pod.Name,
		Namespace:   pod.Namespace,
		Container:   c,
		ContainerID: id,
		StartedAt:   startedAt,
	}
	switch {
	case pod.Spec.HostNetwork:
		t.PodIP = w.d.nodeIP
	case w.rec.Sandbox != nil && len(w.rec.Sandbox.IPs) > 0:
		t.PodIP = w.rec.Sandbox.IPs[0]
	}
	return t
}

// postStart runs the container's postStart hook right after its start, as
// kubelet does. A failure is told (FailedPostStartHook) and marks the run
// for the planner, which kills it (planFailureKills); its exit then goes
// the way of any other under its restart policy. It reports whether the
// hook succeeded (or there is none).
func (w *podWorker) postStart(ctx context.Context, pod *v1.Pod, ref ctrRef, c *v1.Container, id string, startedAt time.Time) bool {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return true
	}
	msg, err := w.d.runHook(ctx, c.Lifecycle.PostStart, w.probeTarget(pod, c, id, startedAt))
	if err == nil {
		return true
	}
	if ctx.Err() != nil {
		return false // a stop cut it short; the stop kills the container
	}
	if msg == "" {
		msg = err.Error()
	}
	w.log.Warn("postStart hook failed", "container", c.Name, "err", err)
	w.event(pod, ref.fieldPath(), v1.EventTypeWarning, "FailedPostStartHook", "%s", msg)
	w.hookFailed[id] = true
	return false
}

// preStop runs the container's preStop hook before its stop signal and
// returns the grace period left for the signal: the hook has the whole
// grace period, and what it used is taken from it, down to kubelet's
// minimum of 2 s. A failure is told as FailedPreStopHook (kubelet's
// message, which leaves the hook's output out of the event).
func (w *podWorker) preStop(ctx context.Context, pod *v1.Pod, ref ctrRef, c *v1.Container, id string, grace time.Duration) time.Duration {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return grace
	}
	start := w.d.clock.Now()
	hctx, cancel := w.d.timeout(ctx, grace)
	defer cancel()
	cr := w.rec.container(ref)
	_, err := w.d.runHook(hctx, c.Lifecycle.PreStop, w.probeTarget(pod, c, id, cr.StartedAt))
	switch {
	case err == nil:
	case hctx.Err() != nil && ctx.Err() == nil:
		// Not a failure: the grace period is over, the signal goes now
		// (kubelet stops waiting for the hook then, and tells no event).
		w.log.Info("preStop hook not done within the grace period", "container", c.Name, "gracePeriod", grace)
	default:
		w.log.Warn("preStop hook failed", "container", c.Name, "err", err)
		w.event(pod, ref.fieldPath(), v1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
	}
	return max(grace-w.d.clock.Now().Sub(start), 2*time.Second)
}
