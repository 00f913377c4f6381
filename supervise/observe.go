package supervise

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
)

// observe asks the runtime about every container the record names. It
// only reads: the planner decides from what it finds, and the steps after
// it (claimRunning, reportLogDrops) act on it.
func (w *podWorker) observe(ctx context.Context, pod *v1.Pod) {
	clear(w.obs)
	w.rec.each(pod, func(ref ctrRef, c *v1.Container, cr *containerRecord) {
		if cr.ID != "" {
			w.observeOne(ctx, ref, cr.ID)
		}
	})
	w.observePodInit(ctx)
}

// claimRunning makes the worker the owner of each container it found
// running, so the runtime's events and the probes' results about it reach
// this worker (a restarted podvisor learns its containers this way).
func (w *podWorker) claimRunning() {
	for id, o := range w.obs {
		if o.Err == nil && o.State.Running {
			w.d.track(id, w)
		}
	}
}

// reportLogDrops reports output the log drivers of the pod's containers
// had to drop (a full log filesystem) as one Warning event for each
// episode of drops (see logdrops.go). It reads the status files only when
// they are due: at the worker's first step and when a driver rewrote one.
func (w *podWorker) reportLogDrops(pod *v1.Pod) {
	if !w.dropsDue {
		return
	}
	w.dropsDue = false
	w.rec.each(pod, func(ref ctrRef, _ *v1.Container, cr *containerRecord) {
		if cr.ID == "" {
			return
		}
		path := w.logPath(pod, ref.Name, cr.RestartCount)
		d, err := w.d.readDrops(path)
		if err != nil {
			return
		}
		seen := w.dropsSeen[ref]
		if !newDropEpisode(seen, path, d) {
			return
		}
		w.dropsSeen[ref] = dropsSeen{path: path, drops: d}
		w.event(pod, ref.fieldPath(), v1.EventTypeWarning, "LogDropped",
			"log output of container %s dropped: %d lines (%d bytes) since %s: %s; the container keeps running and logging resumes when there is room",
			ref.Name, d.Lines, d.Bytes, d.Since.Format(time.RFC3339), d.Reason)
	})
}

// observeOne asks the runtime about one container.
func (w *podWorker) observeOne(ctx context.Context, ref ctrRef, id string) {
	st, err := w.d.rt.State(ctx, id)
	if err != nil {
		// Not an exit: containerd or the shim did not answer.
		w.log.Warn("container state", "container", ref.Name, "err", err)
		w.obs[id] = observation{Err: err}
		return
	}
	o := observation{State: st}
	if !st.Running && st.HasTask && !st.ExitedAt.IsZero() {
		// The OOM event may have come before podvisor watched (or not at
		// all): the container's cgroup, still there until the container
		// is removed, counts the kills.
		o.OOM = w.oom[id] || w.d.cg.oomKills(w.containerCgroup(id)) > 0
	}
	w.obs[id] = o
}
