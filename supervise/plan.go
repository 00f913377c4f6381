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
	// Objects are the local ConfigMaps and Secrets: a container whose
	// environment needs one (or a key) that is missing waits for it.
	Objects Objects
	// MountWait, when set, is kubelet's FailedMount message for a
	// configMap, secret, downwardAPI or projected volume that cannot be
	// set up (a missing object or key): the sandbox waits for it.
	MountWait string
	// VolumesStale says the objects changed since the pod's volumes were
	// last written; VolumesRetryAt is when a failed rewrite is tried again.
	VolumesStale   bool
	VolumesRetryAt time.Time
	// Pressure is the eviction signals under pressure (nil: not told
	// since podvisor started); ResumeShutdown says a pod stopped for a
	// shutdown may start again.
	Pressure       *pressure
	ResumeShutdown bool
	// WaitFor are the pods the pod waits for (podvisor.io/wait-for) that
	// are not Ready, while it has no sandbox: nothing starts (order.go).
	WaitFor []depWait
}

// plan is what to do now, and when to look again.
type plan struct {
	Actions []action
	// BackOffs are containers waiting out a back-off (shown as
	// CrashLoopBackOff or ImagePullBackOff).
	BackOffs []backOff
	// ConfigWaits are containers that would start but wait for a
	// ConfigMap, Secret or key (shown as CreateContainerConfigError).
	ConfigWaits []configWait
	// MountWait is the FailedMount message the pod's volumes wait on
	// (containers shown as ContainerCreating).
	MountWait string
	// WaitFor are the pods that hold the pod's start (shown as
	// WaitingFor:NAMES).
	WaitFor []depWait
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
	Reason     string // Completed, Error, OOMKilled, Unknown, StartError
	FinishedAt time.Time
	// Message, when set, is the runtime's error for a run it refused to
	// start; the container's termination message, if any, follows it.
	Message string
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

// refreshVolumes rewrites the configMap, secret and projected volumes of a
// running pod whose objects changed.
type refreshVolumes struct{}

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

// configWait is a container waiting for what its environment needs;
// Message is kubelet's (it names objects and keys, never values).
type configWait struct {
	Ref     ctrRef
	Message string
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
func (refreshVolumes) String() string    { return "refresh volumes" }
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
	if in.Rec.NodeStop != nil {
		planNodeStop(&p, in)
		return p
	}
	if planDeadline(&p, in) || planRestartAll(&p, in) {
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
	if planDepsWait(&p, in) || !planSandbox(&p, in) {
		return p
	}
	if in.VolumesStale {
		if in.Now.Before(in.VolumesRetryAt) {
			p.wakeAt(in.VolumesRetryAt)
		} else {
			p.add(refreshVolumes{})
		}
	}
	planStarts(&p, in)
	return p
}
