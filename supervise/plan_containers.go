package supervise

import (
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// Containers' runs: what the runtime's view of each run asks for (adoption,
// exits, probes), the sandbox a run needs, and the starts the restart
// policy and the back-offs allow, init containers first.

// planProbeStarts starts the probes of each run found running without
// them: one adopted, or found by a restarted podvisor. A run whose
// postStart hook failed is killed, not probed.
func planProbeStarts(p *plan, in planInput) {
	if in.Rec.Sandbox != nil && !in.Sandbox.Alive {
		return // its containers are killed
	}
	in.Rec.each(in.Pod, func(ref ctrRef, _ *v1.Container, cr *containerRecord) {
		if cr.ID == "" || cr.StartedAt.IsZero() || in.Probing[cr.ID] || in.HookFailed[cr.ID] {
			return
		}
		if o, ok := in.Obs[cr.ID]; ok && o.Err == nil && o.State.Running {
			p.add(startProbes{Ref: ref, ID: cr.ID})
		}
	})
}

// isSidecar reports whether c is a native sidecar: an init container with
// restartPolicy Always.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// planExits adds what the runtime's view of the recorded containers asks
// for: adoption of runs podvisor did not see start, and the exits of those
// that ended. It reports whether there were exits.
func planExits(p *plan, in planInput) bool {
	exits := false
	in.Rec.each(in.Pod, func(ref ctrRef, _ *v1.Container, cr *containerRecord) {
		if cr.ID == "" {
			return
		}
		o, ok := in.Obs[cr.ID]
		if !ok || o.Err != nil {
			return // not an exit: the runtime did not answer; look again later
		}
		st := o.State
		if st.Running {
			if cr.StartedAt.IsZero() {
				p.add(adoptContainer{Ref: ref, ID: cr.ID})
			}
			return
		}
		switch {
		case cr.Terminated != nil && cr.Terminated.ContainerID == "containerd://"+cr.ID:
			// This run's exit is already recorded (podvisor stopped while
			// removing the container): only the removal is left.
		case st.HasTask && !st.ExitedAt.IsZero():
			if cr.StartedAt.IsZero() {
				p.add(adoptContainer{Ref: ref, ID: cr.ID}) // it ran; podvisor died before recording so
			}
			reason := "Completed"
			if o.OOM {
				reason = "OOMKilled"
			} else if st.ExitCode != 0 {
				reason = "Error"
			}
			p.add(recordExit{Ref: ref, ID: cr.ID, ExitCode: st.ExitCode, Reason: reason, FinishedAt: st.ExitedAt})
		case cr.StartedAt.IsZero():
			// Created but never started (podvisor stopped mid-start): not
			// a run, only a container to remove.
		case st.HasTask:
			// A task neither running nor exited (created, or a state the
			// shim could not tell): no exit; look again.
			return
		default:
			// Started, but its container or task is gone without an exit
			// to read: the host rebooted or the task vanished. kubelet
			// reports such a container as exit 255, reason Unknown.
			p.add(recordExit{Ref: ref, ID: cr.ID, ExitCode: 255, Reason: "Unknown", FinishedAt: in.Now})
		}
		p.add(removeContainer{Ref: ref, ID: cr.ID})
		exits = true
	})
	return exits
}

// planSandbox adds what the sandbox needs and reports whether containers
// may be started after it.
func planSandbox(p *plan, in planInput) bool {
	sb := in.Rec.Sandbox
	if sb != nil && !in.Sandbox.Alive {
		// Lost (reboot, cleared run dir): its containers go, and a new
		// sandbox runs the init containers again, as kubelet does.
		if ts := killTargets(in, func(ctrRef) bool { return true }); len(ts) > 0 {
			p.add(killContainers{Targets: ts, Reason: "SandboxChanged"})
		} else {
			p.add(replaceSandbox{})
		}
		return false
	}
	if u := in.Sandbox.RetryUntil; in.Now.Before(u) {
		p.wakeAt(u)
		return false
	}
	if in.MountWait != "" && !in.Sandbox.Prepared {
		// As kubelet waits for the pod's volumes before its sandbox. No
		// wake-up: a new snapshot with the object wakes the worker.
		p.MountWait = in.MountWait
		return false
	}
	if sb == nil {
		p.add(createSandbox{})
	}
	if sb == nil || !sb.Network {
		p.add(attachNetwork{})
	}
	if sb == nil || !in.Sandbox.Prepared {
		p.add(prepareSandbox{})
	}
	return true
}

// planStarts runs init containers one at a time in order, then every app
// container, as the restart policy and back-offs allow. A sidecar (an init
// container with restartPolicy Always) keeps running: the next container
// starts once it has started (its startup probe passed), and it is
// restarted whatever the pod's policy. Once app containers run, a
// sidecar's restart holds up nobody, as kubelet's.
func planStarts(p *plan, in planInput) {
	pod, rec := in.Pod, in.Rec
	policy := pod.Spec.RestartPolicy
	// A sidecar that is not started holds up the containers after it
	// only while none of them has run in this sandbox (kubelet's
	// computeInitContainerActions: once a later one ran, an exited
	// sidecar is just restarted).
	laterRan := false
	for _, cr := range rec.Apps {
		laterRan = laterRan || cr.ID != ""
	}
	inits := pod.Spec.InitContainers
	ranAfter := make([]bool, len(inits))
	for i := len(inits) - 1; i >= 0; i-- {
		ranAfter[i] = laterRan
		cr := rec.Init[inits[i].Name]
		laterRan = laterRan || cr.ID != "" || cr.Done || (cr.Terminated != nil && !cr.Rerun)
	}
	for i := range inits {
		c := &inits[i]
		cr := rec.Init[c.Name]
		if isSidecar(c) {
			ref := ctrRef{Type: containerTypeInit, Name: c.Name}
			if cr.ID == "" {
				startOrWait(p, in, ref, cr)
			} else if in.Probes[cr.ID].Started {
				continue
			}
			if !ranAfter[i] {
				return // the next container waits for this one to start
			}
			continue
		}
		if cr.initComplete() {
			continue
		}
		if cr.ID != "" {
			return // running; its exit wakes the worker
		}
		if cr.Terminated != nil && !cr.Rerun && policy == v1.RestartPolicyNever {
			return // the pod has failed
		}
		startOrWait(p, in, ctrRef{Type: containerTypeInit, Name: c.Name}, cr)
		return
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cr := rec.Apps[c.Name]
		if cr.ID != "" {
			continue
		}
		ref := ctrRef{Type: containerTypeApp, Name: c.Name}
		if cr.Terminated != nil && !status.ContainerShouldRestart(&pod.Spec, c, cr.Terminated.ExitCode) && !in.Restarts[ref] {
			continue
		}
		startOrWait(p, in, ref, cr)
	}
}

func startOrWait(p *plan, in planInput, ref ctrRef, cr *containerRecord) {
	w := in.Waits[ref]
	switch {
	case in.Now.Before(w.RetryUntil):
		p.BackOffs = append(p.BackOffs, backOff{Ref: ref, Until: w.RetryUntil})
		p.wakeAt(w.RetryUntil)
	case cr.Terminated != nil && in.Now.Before(w.CrashUntil):
		p.BackOffs = append(p.BackOffs, backOff{Ref: ref, Until: w.CrashUntil, Crash: true})
		p.wakeAt(w.CrashUntil)
	default:
		if err := envConfigError(in.Pod, containerSpec(in.Pod, ref), in.Objects); err != nil {
			// No wake-up: a new snapshot with the object wakes the worker.
			p.ConfigWaits = append(p.ConfigWaits, configWait{Ref: ref, Message: err.Error()})
			return
		}
		p.add(startContainer{Ref: ref, Restart: cr.Terminated != nil})
	}
}

// finishedPod reports whether the pod has reached a terminal phase under
// its restart policy: nothing will run in it again.
func finishedPod(pod *v1.Pod, rec *podRecord) bool {
	policy := pod.Spec.RestartPolicy
	if policy == v1.RestartPolicyAlways && !anyAppRestartPolicy(&pod.Spec) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := rec.Init[c.Name]
		if isSidecar(c) || cr.initComplete() {
			continue
		}
		return policy == v1.RestartPolicyNever && cr.ID == "" && cr.Terminated != nil && cr.Terminated.ExitCode != 0
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cr := rec.Apps[c.Name]
		if cr.ID != "" || cr.Terminated == nil || status.ContainerShouldRestart(&pod.Spec, c, cr.Terminated.ExitCode) {
			return false
		}
	}
	return true
}

// initComplete reports whether an init container has completed in the
// current sandbox.
func (cr *containerRecord) initComplete() bool {
	return cr.Done || (cr.Terminated != nil && !cr.Rerun && cr.ID == "" && cr.Terminated.ExitCode == 0)
}
