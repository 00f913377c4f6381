package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/mounts"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// maxRounds bounds how often one step plans again after acting; a pod that
// has not settled by then is looked at again after errorRetry.
const maxRounds = 16

// errorRetry is when a step that failed is tried again (a removal, a stop,
// a record that could not be written).
const errorRetry = 5 * time.Second

// podWorker owns one pod. Its goroutine alone touches the fields below
// inbox; others talk to it through the inbox.
//
//	inbox ──▶ receive (spec, stop, OOM, ──▶ observe (runtime, ──▶ plan ──▶ execute
//	  ▲        probe results → record)       reads only)          ▲          │
//	  └── exits, relists, images                                  └── again ◀┘ until a plan has no actions
//	                                                              then save the record, publish the status
type podWorker struct {
	d        *workerDeps
	uid      types.UID
	fullName string // namespace/name: fixed for a UID
	log      *slog.Logger
	inbox    *inbox
	done     chan struct{}

	desired *manifest.Pod
	objs    Objects // the local ConfigMaps and Secrets, as last sent
	// recorded is the spec from the pod's record, for a pod found at
	// start-up that is no longer desired (stopped from what it ran).
	recorded *v1.Pod
	stopping bool
	deleting *metav1.Time // when the stop began, shown as deletionTimestamp
	// nodeStops are the node's stop requests not applied yet;
	// stopWaiters the StopPod calls waiting for the containers to stop;
	// resumeShutdown says a stop for a shutdown may end (the shutdown was
	// cancelled, or podvisor started since).
	// stopStep is what a stop waits on now (shown by describe).
	stopStep *status.StopStep
	// removeAsked is when the removal was asked for, set by the sender;
	// busy is the long call a step is in (a CNI ADD), told when a
	// removal finds the step hanging.
	removeAsked    atomic.Pointer[metav1.Time]
	busy           atomic.Pointer[status.StopStep]
	nodeStops      []NodeStop
	stopWaiters    []chan struct{}
	resumeShutdown bool

	rec   *podRecord
	saved []byte // the record as last written, to skip writes of no change
	obs   map[string]observation
	oom   map[string]bool // container IDs that saw an OOM event
	// probing holds the container IDs whose probes run; probeFailed
	// those whose liveness or startup probe failed ("liveness", "startup");
	// hookFailed those whose postStart hook failed (the planner kills
	// them).
	probing     map[string]bool
	probeFailed map[string]string
	hookFailed  map[string]bool

	// rest is what the last step left at rest, read by the relist
	// (relist.go); nil while a step runs and after one that left the pod
	// otherwise.
	rest atomic.Pointer[restView]

	crash        map[ctrRef]*backoff.Backoff // kubelet's restart back-off
	restarts     map[ctrRef]bool             // asked by Restart, until started again
	last         atomic.Pointer[v1.Pod]      // the pod as last published, for Restart's checks
	retry        map[ctrRef]*retryClock      // failed starts
	sandboxRetry retryClock
	exitSeen     map[ctrRef]time.Time // when podvisor saw the last exit (monotonic)
	dropsSeen    map[ctrRef]dropsSeen // what the log driver dropped, as last reported
	// dropsDue says the drops status files are to be read at the next
	// step: at the first, and after a dropsMsg (never at a relist).
	dropsDue bool
	waiting  map[string]*v1.ContainerStateWaiting
	conds    []v1.PodCondition
	warned   map[string]bool // one-time warning events already emitted
	// volumesAt are the objects the pod's volumes were last written from
	// (volumesSet: they were); volumesRetry is when a failed rewrite is
	// tried again; mountWait is the FailedMount message last shown.
	volumesAt    Objects
	volumesSet   bool
	volumesRetry time.Time
	mountWait    string
	preparedFor  string // the sandbox whose cgroup and files are set up
	// claimMounts are the directories of the pod's persistentVolumeClaim
	// volumes, by volume name, as its sandbox's preparation found them
	// (pvc.go).
	claimMounts map[string]mounts.ClaimMount
	// claimDevices are its Block claims' devices, by volume name
	// (blockdev.go).
	claimDevices map[string]claimDevice
	// ended are the containers of ended runs, removed at the end of the
	// step (removeEnded); the record no longer names them.
	ended []endedRun
	// netJoin, while set, delivers the result of the pod's CNI ADD run
	// beside the step's actions (joinNetwork).
	netJoin      chan netResult
	steps        int  // steps taken, to tell this step's failures from older ones
	failed       bool // an action failed in this step: step again soon
	dropped      bool // the record is being removed: never write it again
	firstPublish bool // Supervisor.Synced waits for this worker's first publish

	// depsCond is the ConditionDependenciesReady shown while the pod
	// waits for other pods (order.go).
	depsCond *v1.PodCondition
	// rejected is why admission refused the pod (devices.go); the pod
	// then runs nothing until it is removed.
	rejected *rejection
	// nodeAdmitted says the node's admission ran (admit.go).
	nodeAdmitted bool
}

// published marks the worker's first publish (or its end) for
// Supervisor.Synced.
func (w *podWorker) published() {
	if w.firstPublish {
		w.firstPublish = false
		w.d.unpublished.Add(-1)
	}
}

// retryClock is the back-off of a failing step and when it may run again.
// A retry of a container's start waits only while no new image arrived.
type retryClock struct {
	bo   *backoff.Backoff
	at   time.Time
	gen  int64
	step int // the worker step that failed
}

func newPodWorker(d *workerDeps, uid types.UID, desired *manifest.Pod, rec *podRecord) *podWorker {
	w := &podWorker{
		d:           d,
		uid:         uid,
		inbox:       newInbox(),
		done:        make(chan struct{}),
		desired:     desired,
		rec:         rec,
		obs:         map[string]observation{},
		oom:         map[string]bool{},
		probing:     map[string]bool{},
		probeFailed: map[string]string{},
		hookFailed:  map[string]bool{},
		crash:       map[ctrRef]*backoff.Backoff{},
		restarts:    map[ctrRef]bool{},
		retry:       map[ctrRef]*retryClock{},
		exitSeen:    map[ctrRef]time.Time{},
		dropsSeen:   map[ctrRef]dropsSeen{},
		dropsDue:    true,
		waiting:     map[string]*v1.ContainerStateWaiting{},
		warned:      map[string]bool{},
	}
	if rec != nil {
		w.recorded = rec.Pod
		w.fullName = rec.fullName()
		// A pod stopped for a shutdown starts again with the next
		// podvisor: the boot after it, or a shutdown that never came.
		w.resumeShutdown = rec.NodeStop != nil && rec.NodeStop.Reason == ReasonNodeShutdown
	}
	if desired != nil {
		w.fullName = desired.Pod.Namespace + "/" + desired.Pod.Name
	}
	w.log = d.log.With("pod", w.fullName, "uid", string(uid))
	w.inbox.removed = w.removalAsked
	return w
}

// run is the worker loop: a thin wrapper around step, which tests call
// directly.
func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	defer w.d.readiness.remove(w.uid)
	var drainBy time.Time
	for {
		w.receive(w.inbox.take())
		base := ctx
		nodeStopping := w.nodeStopping() || len(w.nodeStops) > 0
		if w.stopping || nodeStopping {
			// A stop in progress is not cut short by podvisor's own stop:
			// half-removed containers would leave their shims behind.
			base = context.WithoutCancel(ctx)
		}
		sctx, cancel := context.WithCancel(base)
		if !w.stopping && !nodeStopping {
			// A stop request ends a step that is starting the pod (a CNI
			// plugin or an image that hangs); the stop itself is never
			// interrupted.
			w.inbox.interruptWith(cancel)
		}
		wake, finished := w.step(sctx)
		w.inbox.interruptWith(nil)
		interrupted := sctx.Err() != nil && ctx.Err() == nil
		cancel()
		if finished {
			return
		}
		done := ctx.Done()
		stopping := w.stopping || w.nodeStopping()
		if ctx.Err() != nil {
			if !stopping {
				return
			}
			// Bounded: what is not done by then is resumed from the
			// record at podvisor's next start.
			if drainBy.IsZero() {
				drainBy = w.d.clock.Now().Add(gracePeriod(w.pod()) + 2*errorRetry)
			}
			if !w.d.clock.Now().Before(drainBy) {
				w.log.Warn("podvisor is stopping; the rest of this pod's stop is left for its next start")
				return
			}
			done = nil
		}
		if interrupted {
			continue // take the stop request at once
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if !wake.IsZero() {
			timer = w.d.clock.NewTimer(wake.Sub(w.d.clock.Now()))
			fire = timer.C()
		}
		select {
		case <-done:
			if !stopping {
				return
			}
			// Stopping: go on, bounded, on a context podvisor's stop
			// does not cancel.
		case <-w.inbox.signal:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// receive applies the messages taken from the inbox.
func (w *podWorker) receive(msgs []message) {
	for _, m := range msgs {
		switch m := m.(type) {
		case specMsg:
			w.desired = m.pod
		case objectsMsg:
			w.objs = m.objs
		case stopMsg:
			w.stopping = true
		case oomMsg:
			w.oom[m.containerID] = true
		case dropsMsg:
			w.dropsDue = true
		case probeMsg:
			w.receiveProbe(m.change)
		case restartMsg:
			w.receiveRestart(m)
		case nodeStopMsg:
			w.nodeStops = append(w.nodeStops, m.stop)
			w.stopWaiters = append(w.stopWaiters, m.done)
		case resumeShutdownMsg:
			if w.rec != nil && w.rec.NodeStop != nil && w.rec.NodeStop.Reason == ReasonNodeShutdown {
				w.resumeShutdown = true
			}
		}
	}
}

// pod returns the spec the worker acts on: the desired one, else the one
// recorded when it was started (a pod being stopped after a restart).
func (w *podWorker) pod() *v1.Pod {
	if w.desired != nil {
		return w.desired.Pod
	}
	return w.recorded
}

// step moves the pod toward its desired state: observe, then plan and
// execute until a plan has nothing to do. It returns when to step again
// without a wake-up (zero: only on one) and whether the worker has finished
// (the pod is gone).
func (w *podWorker) step(ctx context.Context) (time.Time, bool) {
	w.rest.Store(nil)
	pod := w.pod()
	now := w.d.clock.Now()
	if w.rec == nil {
		if w.stopping || pod == nil {
			return time.Time{}, true // nothing was ever made
		}
		w.rec = &podRecord{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Created: now.Round(0)}
	}
	if !w.stopping {
		w.rec.Pod = pod
		w.warnOnce(pod)
	} else if w.deleting == nil {
		t := metav1.NewTime(now)
		if a := w.removeAsked.Load(); a != nil {
			t = *a
		}
		w.deleting = &t
		w.log.Info("stopping pod", "gracePeriod", gracePeriod(pod))
		// Not ready from now on, and no more liveness kills.
		w.d.prober.Terminating(string(w.uid))
		w.publish(pod)
	}
	if w.rec.StartTime == nil {
		t := now.Round(0)
		w.rec.StartTime = &t
	}
	if len(w.nodeStops) > 0 {
		w.beginNodeStop(pod, now)
		w.publish(pod)
	}
	w.rec.ensureContainers(pod)
	w.admitNode(pod)
	if rej, err := w.admit(pod); err != nil {
		w.log.Error("pod admission", "err", err)
		w.publish(pod)
		return now.Add(errorRetry), false
	} else if rej != nil && !w.stopping {
		// Rejected at admission: nothing is made, the status says why.
		// Removed, it is stopped as any pod is (there is nothing to stop).
		// At rest: a relist has nothing to wake it for.
		w.rest.Store(&restView{running: map[string]uint32{}})
		w.publish(pod)
		return time.Time{}, false
	}
	w.seeRecordedExits(pod, now)
	if w.d.down.Load() != nil {
		// Nothing can be observed or done, and nothing is charged to a
		// back-off: the pod says why, and waits to be woken.
		w.publish(pod)
		return time.Time{}, false
	}
	if w.conds == nil {
		// Shown from the moment it is known: Pending, ContainerCreating.
		w.publish(pod)
	}
	w.steps++
	w.failed = false
	w.observe(ctx, pod)
	w.claimRunning()
	w.reportLogDrops(pod)

	var wake time.Time
	settled := false
	for round := 0; ; round++ {
		if round == maxRounds {
			w.log.Warn("pod did not settle; looking again shortly", "rounds", round)
			wake = w.d.clock.Now().Add(errorRetry)
			break
		}
		p := planPod(w.planInput(pod))
		if len(p.Actions) == 0 {
			w.applyBackOffs(pod, p.BackOffs)
			w.applyConfigWaits(pod, p.ConfigWaits)
			w.applyMountWait(pod, p.MountWait)
			w.applyDepsWait(pod, p.WaitFor)
			wake = p.Wake
			settled = true
			if w.failed {
				wake = earliest(wake, w.d.clock.Now().Add(errorRetry))
			}
			break
		}
		finished, err := w.execute(ctx, pod, p.Actions)
		if finished {
			return time.Time{}, true
		}
		w.notifyStopped()
		if errors.Is(err, errReported) {
			continue // its retry is armed; the next plan waits for it
		}
		if err != nil {
			if ctx.Err() != nil {
				return time.Time{}, false
			}
			if !errors.Is(err, ErrRuntimeUnavailable) {
				w.log.Warn("pod step failed; retrying", "err", err)
			}
			wake = earliest(p.Wake, w.d.clock.Now().Add(errorRetry))
			break
		}
	}
	w.save()
	w.publish(pod)
	// After the publish: the restarts that replace them are shown first.
	if w.removeEnded(ctx) {
		wake = earliest(wake, w.d.clock.Now().Add(errorRetry))
	}
	w.notifyStopped()
	w.rest.Store(w.restView(pod, settled, wake))
	return wake, false
}

// planInput gathers the planner's input from the worker's state. It
// writes nothing: calling it twice on the same state gives the same input.
func (w *podWorker) planInput(pod *v1.Pod) planInput {
	now := w.d.clock.Now()
	in := planInput{
		Now:            now,
		Pod:            pod,
		Stopping:       w.stopping,
		Rec:            w.rec,
		Obs:            w.obs,
		Probes:         probeViews(pod, w.rec, w.halting(), w.probing, w.probeFailed),
		Probing:        w.probing,
		HookFailed:     w.hookFailed,
		Waits:          map[ctrRef]waits{},
		Restarts:       w.restarts,
		Objects:        w.objs,
		Pressure:       w.d.pressure.Load(),
		ResumeShutdown: w.resumeShutdown,
		WaitFor:        w.depsWaits(pod),
	}
	if w.deleting != nil {
		in.StopSince = w.deleting.Time
	}
	if sb := w.rec.Sandbox; sb != nil {
		in.Sandbox.Alive = w.d.sandboxes.Alive(sb) && w.podInitAlive(sb)
		in.Sandbox.Prepared = w.preparedFor == sb.ID
	}
	in.Sandbox.RetryUntil = w.sandboxRetry.at
	if len(contentVolumes(pod)) > 0 && !w.stopping {
		if in.Sandbox.Prepared {
			in.VolumesStale = !w.volumesSet || !sameObjects(w.volumesAt, w.objs)
			in.VolumesRetryAt = w.volumesRetry
		} else {
			in.MountWait = w.mountError(pod)
		}
	}
	if in.MountWait == "" && !in.Sandbox.Prepared && !w.stopping {
		in.MountWait = w.claimWait(pod)
	}
	gen := w.d.imageGen.Load()
	w.rec.each(pod, func(ref ctrRef, _ *v1.Container, cr *containerRecord) {
		var wt waits
		if r := w.retry[ref]; r != nil && r.gen == gen {
			wt.RetryUntil = r.at
		}
		if bo := w.crash[ref]; bo != nil && cr.Terminated != nil {
			if seen, ok := w.exitSeen[ref]; ok {
				wt.CrashUntil = bo.Until(seen)
			}
		}
		in.Waits[ref] = wt
	})
	return in
}

// seeRecordedExits notes when podvisor saw each exit the record holds that
// this worker did not see happen: an exit recorded by an earlier podvisor
// has its back-off count from now.
func (w *podWorker) seeRecordedExits(pod *v1.Pod, now time.Time) {
	w.rec.each(pod, func(ref ctrRef, _ *v1.Container, cr *containerRecord) {
		if _, ok := w.exitSeen[ref]; cr.Terminated != nil && !ok {
			w.exitSeen[ref] = now
		}
	})
}

// earliest returns the earlier of two wake-up times; zero is never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// save writes the record if it changed.
func (w *podWorker) save() error {
	if w.dropped {
		return nil
	}
	var err error
	if w.saved, err = saveRecord(w.d.layout, w.rec, w.saved); err != nil {
		w.log.Error("persist pod state", "err", err)
	}
	return err
}

func (w *podWorker) warnOnce(pod *v1.Pod) {
	if w.desired == nil {
		return
	}
	for _, msg := range w.desired.Warnings {
		if !w.warned[msg] {
			w.warned[msg] = true
			w.event(pod, "", v1.EventTypeWarning, "FieldIgnored", "%s", msg)
		}
	}
}

// event is the worker's one way to report something to the event seam.
func (w *podWorker) event(pod *v1.Pod, fieldPath, typ, reason, format string, args ...any) {
	w.d.status.Record(status.Event{Pod: pod, FieldPath: fieldPath, Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}
