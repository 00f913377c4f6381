package supervise

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// The planner decides; the executor (exec.go) does. planPod is a pure
// function from what is wanted (the spec, a stop request), what is known
// (the pod's record) and what is observed (the runtime's view of each
// container, the sandbox, the back-off clocks) to the actions that move the
// pod one step on, as kubelet's computePodActions and containerd's restart
// monitor do. The worker applies a plan, then plans again from the changed
// record until a plan has no actions.
//
//	record exits ──▶ stop? kill apps, then inits, then clean up
//	     │
//	     ▼
//	finished pod? release the sandbox
//	     │
//	     ▼
//	sandbox lost? kill all, replace ──▶ create / attach network / prepare
//	     │
//	     ▼
//	init containers in order ──▶ app containers (restart policy, back-off)

const (
	containerTypeInit = "init"
	containerTypeApp  = "app"
)

// ctrRef names one container of a pod.
type ctrRef struct {
	Type string // containerTypeInit or containerTypeApp
	Name string
}

func (r ctrRef) fieldPath() string {
	if r.Type == containerTypeInit {
		return "spec.initContainers{" + r.Name + "}"
	}
	return "spec.containers{" + r.Name + "}"
}

// observation is the runtime's view of one container the record names.
type observation struct {
	State ContainerState
	Err   error // the runtime could not tell; no decision is taken on it
	OOM   bool  // an OOM kill was seen (event or cgroup count)
}

// sandboxView is what the planner knows of the pod's sandbox besides its
// record.
type sandboxView struct {
	Alive      bool      // its namespaces exist in this boot
	Prepared   bool      // pod cgroup and files are set up for it
	RetryUntil time.Time // a failed set-up is retried then
}

// waits are a container's back-off clocks.
type waits struct {
	CrashUntil time.Time // crash back-off: a restart waits until then
	RetryUntil time.Time // a failed start (image, create) is retried then
}

// probeView is what the probes say of one running container.
type probeView struct {
	Started bool // its startup probe passed, or it has none
	Ready   bool
	// Failed is the probe ("liveness" or "startup") whose failure
	// threshold was reached: the container is killed, and its restart
	// policy decides what follows.
	Failed string
}

// planInput is everything planPod decides from. It is read, never changed.
type planInput struct {
	Now      time.Time
	Pod      *v1.Pod
	Stopping bool
	// StopSince is when the stop began: the grace period counts from it.
	StopSince time.Time
	Rec       *podRecord
	Obs       map[string]observation // by container ID
	Probes    map[string]probeView   // by container ID, running containers
	// Probing holds the container IDs whose probes run; HookFailed those
	// whose postStart hook failed.
	Probing    map[string]bool
	HookFailed map[string]bool
	Sandbox    sandboxView
	Waits      map[ctrRef]waits
	// Restarts are the containers podvisor restart asked to restart now.
	Restarts map[ctrRef]bool
}

// plan is what to do now, and when to look again.
type plan struct {
	Actions []action
	// BackOffs are containers waiting out a back-off (shown as
	// CrashLoopBackOff or ImagePullBackOff).
	BackOffs []backOff
	// Wake is when to plan again without a wake-up; zero: only on one.
	Wake time.Time
}

func (p *plan) add(a action) { p.Actions = append(p.Actions, a) }

func (p *plan) wakeAt(t time.Time) {
	if p.Wake.IsZero() || t.Before(p.Wake) {
		p.Wake = t
	}
}

// action is one step for the executor.
type action interface{ String() string }

// adoptContainer completes the record of a container started by a podvisor
// that died before recording so.
type adoptContainer struct {
	Ref ctrRef
	ID  string
}

// recordExit records a run's end before its container goes.
type recordExit struct {
	Ref        ctrRef
	ID         string
	ExitCode   int32
	Reason     string // Completed, Error, OOMKilled, Unknown
	FinishedAt time.Time
}

// removeContainer removes a container whose run has ended.
type removeContainer struct {
	Ref ctrRef
	ID  string
}

// killTarget is one container to stop.
type killTarget struct {
	Ref ctrRef
	ID  string
}

// killContainers stops containers at once, each with the grace period
// (0: SIGKILL now). Message, when set, is told as a Killing event.
type killContainers struct {
	Targets []killTarget
	Grace   time.Duration
	Reason  string
	Message string
	// Note, when set and Message is not, is added to each container's
	// "Stopping container" message (why it is stopped).
	Note string
	// PreStop runs the containers' preStop hooks first: the grace period
	// asked for is above 0 (kubelet's killContainer skips them at 0).
	PreStop bool
}

// releaseSandbox gives a finished pod's network and namespaces back.
type releaseSandbox struct{}

// replaceSandbox drops a lost sandbox; its init containers run again.
type replaceSandbox struct{}

// createSandbox makes the pod's namespaces and /dev/shm.
type createSandbox struct{}

// attachNetwork attaches the sandbox to the pod network (CNI ADD).
type attachNetwork struct{}

// prepareSandbox sets up the pod cgroup and its files and volumes.
type prepareSandbox struct{}

// startContainer creates and starts one run of a container.
type startContainer struct {
	Ref     ctrRef
	Restart bool // a previous run ended
}

// startProbes starts probing a running container that has no probes yet
// (adopted, or found running by a restarted podvisor).
type startProbes struct {
	Ref ctrRef
	ID  string
}

// cleanupPod removes everything the stopped pod owns, then its record.
type cleanupPod struct{}

// backOff is a container waiting out a back-off until Until.
type backOff struct {
	Ref   ctrRef
	Until time.Time
	Crash bool // crash back-off; else a retry of a failed start
}

func (a adoptContainer) String() string  { return "adopt " + a.Ref.Name + " " + a.ID }
func (a recordExit) String() string      { return "record exit of " + a.Ref.Name + ": " + a.Reason }
func (a removeContainer) String() string { return "remove " + a.Ref.Name + " " + a.ID }
func (a killContainers) String() string  { return "kill containers (" + a.Reason + ")" }
func (releaseSandbox) String() string    { return "release sandbox" }
func (replaceSandbox) String() string    { return "replace lost sandbox" }
func (createSandbox) String() string     { return "create sandbox" }
func (attachNetwork) String() string     { return "attach network" }
func (prepareSandbox) String() string    { return "prepare sandbox" }
func (a startContainer) String() string  { return "start " + a.Ref.Name }
func (a startProbes) String() string     { return "probe " + a.Ref.Name + " " + a.ID }
func (cleanupPod) String() string        { return "clean up pod" }

// planPod plans the next step of a pod. in.Rec has a record for every
// container of in.Pod.
func planPod(in planInput) plan {
	var p plan
	if planExits(&p, in) {
		return p // plan again once the exits are recorded
	}
	if in.Stopping {
		planStop(&p, in)
		return p
	}
	if finishedPod(in.Pod, in.Rec) && !restartPending(in) {
		// Its sidecars stop once the regular containers have ended, last
		// first, as kubelet stops them.
		if ts := lastSidecar(in); len(ts) > 0 {
			p.add(killContainers{Targets: ts, Grace: remainingGrace(in, finishedAt(in.Rec)), Reason: "Killing", PreStop: podGraceAsked(in.Pod)})
			return p
		}
		if in.Rec.Sandbox != nil {
			// As kubelet stops the sandbox of a terminal pod.
			p.add(releaseSandbox{})
		}
		return p
	}
	if planFailureKills(&p, in) || planRestartKills(&p, in) {
		return p
	}
	planProbeStarts(&p, in)
	if !planSandbox(&p, in) {
		return p
	}
	planStarts(&p, in)
	return p
}

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

// isSidecar reports whether c is a native sidecar: an init container with
// restartPolicy Always.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
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
		if cr.Terminated != nil && !shouldRestart(policy, cr.Terminated.ExitCode) && !in.Restarts[ref] {
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
		p.add(startContainer{Ref: ref, Restart: cr.Terminated != nil})
	}
}

// finishedPod reports whether the pod has reached a terminal phase under
// its restart policy: nothing will run in it again.
func finishedPod(pod *v1.Pod, rec *podRecord) bool {
	policy := pod.Spec.RestartPolicy
	if policy == v1.RestartPolicyAlways {
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
	for _, c := range pod.Spec.Containers {
		cr := rec.Apps[c.Name]
		if cr.ID != "" || cr.Terminated == nil || shouldRestart(policy, cr.Terminated.ExitCode) {
			return false
		}
	}
	return true
}

func shouldRestart(policy v1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case v1.RestartPolicyAlways:
		return true
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return false
}

// initComplete reports whether an init container has completed in the
// current sandbox.
func (cr *containerRecord) initComplete() bool {
	return cr.Done || (cr.Terminated != nil && !cr.Rerun && cr.ID == "" && cr.Terminated.ExitCode == 0)
}
