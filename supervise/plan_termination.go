package supervise

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Killing and termination: which containers a plan stops, in what order,
// with what grace period (kubelet's computePodActions kill reasons and its
// termination ordering of app containers, then sidecars last first).

// planFailureKills kills the running containers whose postStart hook
// failed (kubelet's FailedPostStartHook kill, with the pod's grace period)
// and those whose liveness or startup probe failed, each with the probe's
// terminationGracePeriodSeconds or the pod's, as kubelet's
// computePodActions does; their exits then go the way of any other, under
// the restart policy.
func planFailureKills(p *plan, in planInput) bool {
	killed := false
	in.Rec.each(in.Pod, func(ref ctrRef, c *v1.Container, cr *containerRecord) {
		pv := in.Probes[cr.ID]
		hook := in.HookFailed[cr.ID]
		if cr.ID == "" || (pv.Failed == "" && !hook) {
			return
		}
		if o, ok := in.Obs[cr.ID]; !ok || o.Err != nil || !o.State.Running {
			return
		}
		killed = true
		if hook {
			p.add(killContainers{
				Targets: []killTarget{{Ref: ref, ID: cr.ID}},
				Grace:   gracePeriod(in.Pod),
				Reason:  "Killing",
				Message: "FailedPostStartHook",
				PreStop: podGraceAsked(in.Pod),
			})
			return
		}
		// kubelet's messages (computePodActions, and
		// computeInitContainerActions for a sidecar).
		msg := "Container " + c.Name + " failed " + pv.Failed + " probe"
		switch {
		case ref.Type == containerTypeInit:
			msg = "Init container " + c.Name + " failed " + pv.Failed + " probe"
		case in.Pod.Spec.RestartPolicy != v1.RestartPolicyNever:
			msg += ", will be restarted"
		}
		grace, asked := probeGracePeriod(in.Pod, c, pv.Failed)
		p.add(killContainers{
			Targets: []killTarget{{Ref: ref, ID: cr.ID}},
			Grace:   grace,
			Reason:  "Killing",
			Message: msg,
			PreStop: asked,
		})
	})
	return killed
}

// probeGracePeriod is the grace period of a kill for a failed probe: the
// probe's own terminationGracePeriodSeconds, else the pod's; asked says
// whether it was above 0 (the preStop hook runs then).
func probeGracePeriod(pod *v1.Pod, c *v1.Container, probe string) (grace time.Duration, asked bool) {
	pr := c.LivenessProbe
	if probe == "startup" {
		pr = c.StartupProbe
	}
	if pr != nil && pr.TerminationGracePeriodSeconds != nil {
		return max(time.Duration(*pr.TerminationGracePeriodSeconds)*time.Second, 2*time.Second), *pr.TerminationGracePeriodSeconds > 0
	}
	return gracePeriod(pod), podGraceAsked(pod)
}

// podGraceAsked reports whether the pod's grace period is above 0 as
// written (gracePeriod raises it to kubelet's 2 s minimum).
func podGraceAsked(pod *v1.Pod) bool {
	s := pod.Spec.TerminationGracePeriodSeconds
	return s == nil || *s > 0
}

// remainingGrace is what is left of the pod's grace period since since,
// at least kubelet's 2 s for each container; the whole of it for a zero
// since.
func remainingGrace(in planInput, since time.Time) time.Duration {
	grace := gracePeriod(in.Pod)
	if since.IsZero() {
		return grace
	}
	return max(grace-in.Now.Sub(since), 2*time.Second)
}

// finishedAt is when the last app container of a finished pod ended: its
// sidecars' stop counts from then.
func finishedAt(rec *podRecord) time.Time {
	var t time.Time
	for _, cr := range rec.Apps {
		if cr.Terminated != nil && cr.Terminated.FinishedAt.Time.After(t) {
			t = cr.Terminated.FinishedAt.Time
		}
	}
	return t
}

// lastSidecar returns the last sidecar, in spec order, with a run: the
// next one to stop.
func lastSidecar(in planInput) []killTarget {
	inits := in.Pod.Spec.InitContainers
	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		if !isSidecar(c) {
			continue
		}
		ref := ctrRef{Type: containerTypeInit, Name: c.Name}
		if ts := killTargets(in, func(r ctrRef) bool { return r == ref }); len(ts) > 0 {
			return ts
		}
	}
	return nil
}

// planStop stops the app containers and a running regular init container
// first, all at once, then the sidecars one at a time, last first
// (kubelet's termination ordering); then cleans up. The grace period counts from the start
// of the stop, as kubelet's termination ordering, with its 2 s minimum for
// each container. A container the runtime cannot tell about is left to the
// clean-up, which kills and removes every container carrying the pod's
// label.
func planStop(p *plan, in planInput) {
	grace, preStop := remainingGrace(in, in.StopSince), podGraceAsked(in.Pod)
	regular := func(ref ctrRef) bool {
		return ref.Type == containerTypeApp || !isSidecar(containerSpec(in.Pod, ref))
	}
	if ts := killTargets(in, regular); len(ts) > 0 {
		p.add(killContainers{Targets: ts, Grace: grace, Reason: "Killing", PreStop: preStop})
		return
	}
	if ts := lastSidecar(in); len(ts) > 0 {
		p.add(killContainers{Targets: ts, Grace: grace, Reason: "Killing", PreStop: preStop})
		return
	}
	p.add(cleanupPod{})
}

// killTargets lists the containers with a run that match, leaving out
// those the runtime could not tell about (their kill failed, or their state
// could not be read).
func killTargets(in planInput, match func(ctrRef) bool) []killTarget {
	var ts []killTarget
	in.Rec.each(in.Pod, func(ref ctrRef, _ *v1.Container, cr *containerRecord) {
		if cr.ID == "" || !match(ref) {
			return
		}
		if o, ok := in.Obs[cr.ID]; ok && o.Err != nil {
			return
		}
		ts = append(ts, killTarget{Ref: ref, ID: cr.ID})
	})
	return ts
}

// gracePeriod is the pod's termination grace period, at least kubelet's
// minimum of 2 s (minimumGracePeriodInSeconds).
func gracePeriod(pod *v1.Pod) time.Duration {
	grace := 30 * time.Second
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	}
	return max(grace, 2*time.Second)
}
