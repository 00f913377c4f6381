package supervise

import (
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// Restarting all containers in place: a container whose run ends with an
// exit code its RestartAllContainers rule matches restarts the whole pod in
// its sandbox, as kubelet does. Every container still running is stopped
// at once (no preStop hook, kubelet's minimum grace period of 2 s), every
// run is removed, then the pod starts again from its first init container,
// in the same sandbox (network, IPC, volumes kept). Each container that had
// run counts one restart more, its last state RestartingAllContainers (exit
// 137); the pod's AllContainersRestarting condition is True meanwhile.

// restartAllGrace is the grace period of the containers stopped for a
// restart of all containers: kubelet stops them with a grace period of 0
// (no preStop hook), raised to its minimum of 2 s.
const restartAllGrace = 2 * time.Second

// restartAllTrigger returns the container whose ended run asks for a
// restart of all containers, or nil. The exit of a sidecar that ended
// after the regular containers had all ended (the pod was done, its
// sidecars stopped) asks for nothing, as kubelet no longer syncs a pod
// whose phase is terminal.
func restartAllTrigger(pod *v1.Pod, rec *podRecord) *ctrRef {
	var trigger *ctrRef
	done := finishedPod(pod, rec)
	appsEnded := finishedAt(rec)
	rec.each(pod, func(ref ctrRef, c *v1.Container, cr *containerRecord) {
		if trigger != nil || cr == nil || cr.ID != "" || cr.Terminated == nil || !status.TriggersRestartAll(c, cr.Terminated.ExitCode) {
			return
		}
		if done && ref.Type == containerTypeInit && isSidecar(c) && !cr.Terminated.FinishedAt.Time.Before(appsEnded) {
			return
		}
		r := ref
		trigger = &r
	})
	return trigger
}

// restartAllPending reports whether a restart of all containers has begun
// and not yet reset the containers (the AllContainersRestarting condition).
func restartAllPending(pod *v1.Pod, rec *podRecord) bool {
	return restartAllTrigger(pod, rec) != nil
}

// planRestartAll carries out a restart of all containers that has begun:
// it stops every container still running, then resets the records so that
// the pod starts again from its first init container. It reports whether
// it planned (nothing else is done meanwhile).
func planRestartAll(p *plan, in planInput) bool {
	trigger := restartAllTrigger(in.Pod, in.Rec)
	if trigger == nil {
		return false
	}
	if ts := killTargets(in, func(ctrRef) bool { return true }); len(ts) > 0 {
		p.add(announceRestartAll{Trigger: *trigger})
		p.add(killContainers{Targets: ts, Grace: restartAllGrace, Reason: "Killing", Message: "killing"})
		return true
	}
	running := false
	in.Rec.each(in.Pod, func(_ ctrRef, _ *v1.Container, cr *containerRecord) {
		running = running || cr.ID != ""
	})
	if !running {
		p.add(resetContainers{Trigger: *trigger})
	}
	// Else a container the runtime could not tell about: looked at again
	// shortly, nothing starts meanwhile.
	return true
}

// announceRestartAll shows the pod with its AllContainersRestarting
// condition True before its containers are stopped.
type announceRestartAll struct{ Trigger ctrRef }

// resetContainers forgets every container's run once none is left, so
// that the pod starts again from its first init container in its sandbox.
type resetContainers struct{ Trigger ctrRef }

func (a announceRestartAll) String() string {
	return "restart all containers (" + a.Trigger.Name + " exited)"
}
func (a resetContainers) String() string { return "reset containers (" + a.Trigger.Name + " exited)" }

// resetContainers is kubelet's status of the containers it removed for a
// restart of all containers: each that had run waits again, one restart
// more, its last state RestartingAllContainers with exit code 137. An init
// container that had completed runs again; no back-off holds a start.
func (w *podWorker) resetContainers(pod *v1.Pod, a resetContainers) {
	w.log.Info("restarting all containers", "trigger", a.Trigger.Name)
	w.rec.each(pod, func(ref ctrRef, _ *v1.Container, cr *containerRecord) {
		if cr.Terminated == nil && !cr.Done {
			return // it has not run
		}
		cr.RestartCount++
		cr.LastState = &v1.ContainerStateTerminated{
			ExitCode: 137,
			Reason:   status.ReasonRestartingAllContainers,
			Message:  status.MessageRestartingAllContainers,
		}
		cr.Terminated = nil
		cr.Done, cr.Rerun = false, false
		cr.Started, cr.Ready = false, false
	})
	w.save()
}
