package status

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons kubelet uses (pkg/kubelet/status/generate.go).
const (
	// ReasonUnknownContainerStatuses says that all container statuses are unknown.
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
	// ReasonPodCompleted says that all related containers have succeeded.
	ReasonPodCompleted = "PodCompleted"
	// ReasonPodFailed says that the pod has failed and so have its containers.
	ReasonPodFailed = "PodFailed"
	// ReasonContainersNotReady says that one or more containers are not ready.
	ReasonContainersNotReady = "ContainersNotReady"
	// ReasonContainersNotInitialized says that one or more init containers
	// have not succeeded.
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	// ReasonReadinessGatesNotReady says that one or more readiness gates are
	// not ready.
	ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"
)

// isRestartableInitContainer reports whether c is a sidecar: an init
// container with restartPolicy Always (pkg/api/v1/pod/util.go).
func isRestartableInitContainer(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// containerStatus finds the status of the container called name
// (podutil.GetContainerStatus).
func containerStatus(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for i := range statuses {
		if statuses[i].Name == name {
			return statuses[i], true
		}
	}
	return v1.ContainerStatus{}, false
}

// hasAnyRegularContainerStarted reports whether a regular container has run,
// which means the init containers completed once
// (pkg/kubelet/container/helpers.go HasAnyRegularContainerStarted). Kubelet now
// asks the runtime about the current sandbox only; podvisor's statuses
// describe the current sandbox, so they answer the same question.
func hasAnyRegularContainerStarted(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	for i := range spec.Containers {
		st, ok := containerStatus(statuses, spec.Containers[i].Name)
		if ok && (st.State.Running != nil || st.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// Phase computes the pod phase from the spec (restartPolicy, init containers)
// and the container statuses as kubelet's getPhase does
// (pkg/kubelet/kubelet_pods.go), including regular and restartable (sidecar)
// init containers.
//
// Two inputs of getPhase are fixed by what podvisor is:
//   - podIsTerminal only matters for non-static pods (kubelet's
//     "TODO(#116484): Also assign terminal phase to static pods"), and every
//     podvisor pod is a static pod, so it is ignored;
//   - podHasInitialized is derived from statuses: a regular container that
//     runs or ran (HasAnyRegularContainerStarted).
//
// With the ContainerRestartRules feature (on by default), a regular
// container's own restartPolicy and restartPolicyRules decide whether it
// restarts (ContainerShouldRestart), hence whether a terminated pod is
// Running; init containers follow the pod's restartPolicy (podvisor
// accepts no other on them).
func Phase(spec *v1.PodSpec, initStatuses, statuses []v1.ContainerStatus) v1.PodPhase {
	pendingRestartableInitContainers := 0
	pendingRegularInitContainers := 0
	failedInitialization := 0

	// Regular init containers.
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if isRestartableInitContainer(c) {
			continue // sidecars count below, with the regular containers
		}
		st, ok := containerStatus(initStatuses, c.Name)
		if !ok {
			pendingRegularInitContainers++
			continue
		}
		switch {
		case st.State.Running != nil:
			pendingRegularInitContainers++
		case st.State.Terminated != nil:
			if t := st.State.Terminated; t.ExitCode != 0 && !restartingAll(t) && !TriggersRestartAll(c, t.ExitCode) {
				failedInitialization++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 && !restartingAll(t) && !TriggersRestartAll(c, t.ExitCode) {
					failedInitialization++
				}
			} else {
				pendingRegularInitContainers++
			}
		default:
			pendingRegularInitContainers++
		}
	}

	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0

	// Restartable init containers: they run beside the regular ones, but
	// once terminated they no longer count for the phase.
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !isRestartableInitContainer(c) {
			continue
		}
		st, ok := containerStatus(initStatuses, c.Name)
		if !ok {
			unknown++
			continue
		}
		switch {
		case st.State.Running != nil:
			if st.Started == nil || !*st.Started {
				pendingRestartableInitContainers++
			}
			running++
		case st.State.Terminated != nil:
			// not taken into account
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated == nil {
				pendingRestartableInitContainers++
				waiting++
			}
		default:
			pendingRestartableInitContainers++
			unknown++
		}
	}

	stoppedNotRestartable := 0
	for i := range spec.Containers {
		c := &spec.Containers[i]
		st, ok := containerStatus(statuses, c.Name)
		if !ok {
			unknown++
			continue
		}
		switch {
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if !ContainerShouldRestart(spec, c, st.State.Terminated.ExitCode) && !restartingAll(st.State.Terminated) {
				stoppedNotRestartable++
			}
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated != nil {
				stopped++
				if !ContainerShouldRestart(spec, c, st.LastTerminationState.Terminated.ExitCode) && !restartingAll(st.LastTerminationState.Terminated) {
					stoppedNotRestartable++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInitialization > 0 && spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}

	podHasInitialized := hasAnyRegularContainerStarted(spec, statuses)
	switch {
	case pendingRegularInitContainers > 0 ||
		// A pod whose regular containers have run does not go back to
		// Pending while its sidecars restart.
		(pendingRestartableInitContainers > 0 && !podHasInitialized):
		return v1.PodPending
	case waiting > 0:
		// One or more containers has not been started.
		return v1.PodPending
	case running > 0 && unknown == 0:
		// All containers have been started and at least one is running.
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		// All containers are terminated: Running while one of them
		// restarts (the pod's restartPolicy, or the container's own and
		// its restartPolicyRules, say it does), as kubelet's with
		// ContainerRestartRules.
		if stopped != stoppedNotRestartable {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	default:
		return v1.PodPending
	}
}

// kubeletConditions are the condition types kubelet owns
// (pkg/kubelet/types/pod_status.go PodConditionByKubelet); Conditions replaces
// them and keeps any other condition found in prev (DisruptionTarget too,
// which kubelet only shares).
var kubeletConditions = map[v1.PodConditionType]bool{
	v1.PodScheduled:              true,
	v1.PodReady:                  true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodReadyToStartContainers: true,
	v1.PodResizePending:          true,
	v1.PodResizeInProgress:       true,
	v1.AllContainersRestarting:   true,
}

// Conditions returns the pod conditions kubelet sets, in kubelet's order:
// PodReadyToStartContainers (true when the sandbox, with its network, is
// ready), Initialized, Ready, ContainersReady and PodScheduled, with kubelet's
// reasons and messages (pkg/kubelet/status/generate.go), for example
// ContainersNotReady "containers with unready status: [a b]",
// ContainersNotInitialized "containers with incomplete status: [init]", and
// PodCompleted or PodFailed once the phase is terminal.
//
// Conditions of other types in prev (such as the ones readiness gates name)
// are kept, ahead of kubelet's, and readiness gates are evaluated against
// them. LastTransitionTime comes from the condition of the same type in prev
// when its status did not change, else it is now (kubelet's status manager,
// updateLastTransitionTime). ObservedGeneration is left unset.
func Conditions(spec *v1.PodSpec, phase v1.PodPhase, initStatuses, statuses []v1.ContainerStatus, sandboxReady bool, prev []v1.PodCondition, now time.Time) []v1.PodCondition {
	// Kubelet evaluates conditions over init and regular statuses together;
	// nil only when both are nil.
	var all []v1.ContainerStatus
	if initStatuses != nil || statuses != nil {
		all = make([]v1.ContainerStatus, 0, len(initStatuses)+len(statuses))
		all = append(append(all, initStatuses...), statuses...)
	}

	out := make([]v1.PodCondition, 0, len(prev)+5)
	for _, c := range prev {
		if !kubeletConditions[c.Type] {
			out = append(out, c)
		}
	}
	others := out[:len(out):len(out)]

	sandbox := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
	if sandboxReady {
		sandbox.Status = v1.ConditionTrue
	}
	out = append(out,
		sandbox,
		initializedCondition(spec, all, phase),
		readyCondition(spec, others, all, phase),
		containersReadyCondition(spec, all, phase),
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	)

	at := metav1.NewTime(now)
	for i := len(others); i < len(out); i++ {
		out[i].LastTransitionTime = at
		for _, p := range prev {
			if p.Type == out[i].Type && p.Status == out[i].Status {
				out[i].LastTransitionTime = p.LastTransitionTime
				break
			}
		}
	}
	return out
}

// containersReadyCondition is GenerateContainersReadyCondition.
func containersReadyCondition(spec *v1.PodSpec, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	if all == nil {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonUnknownContainerStatuses}
	}
	var unknown, unready []string
	check := func(c *v1.Container) {
		if st, ok := containerStatus(all, c.Name); ok {
			if !st.Ready {
				unready = append(unready, c.Name)
			}
		} else {
			unknown = append(unknown, c.Name)
		}
	}
	for i := range spec.InitContainers {
		if isRestartableInitContainer(&spec.InitContainers[i]) {
			check(&spec.InitContainers[i])
		}
	}
	for i := range spec.Containers {
		check(&spec.Containers[i])
	}

	if (phase == v1.PodSucceeded && len(unknown) == 0) || phase == v1.PodFailed {
		return terminalCondition(v1.ContainersReady, phase)
	}
	return containersCondition(v1.ContainersReady, ReasonContainersNotReady, unknown, "unready", unready)
}

// containersCondition is kubelet's message for a condition that waits on
// containers: False naming those of unknown status and those in the named
// state, or True when there are none.
func containersCondition(t v1.PodConditionType, reason string, unknown []string, state string, waiting []string) v1.PodCondition {
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(waiting) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with %s status: %s", state, waiting))
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: t, Status: v1.ConditionTrue}
}

// terminalCondition is generateContainersReadyConditionForTerminalPhase.
func terminalCondition(t v1.PodConditionType, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionFalse}
	switch phase {
	case v1.PodFailed:
		c.Reason = ReasonPodFailed
	case v1.PodSucceeded:
		c.Reason = ReasonPodCompleted
	}
	return c
}

// readyCondition is GeneratePodReadyCondition.
func readyCondition(spec *v1.PodSpec, conditions []v1.PodCondition, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cr := containersReadyCondition(spec, all, phase)
	if cr.Status != v1.ConditionTrue {
		return v1.PodCondition{Type: v1.PodReady, Status: cr.Status, Reason: cr.Reason, Message: cr.Message}
	}
	var msgs []string
	for _, rg := range spec.ReadinessGates {
		var found *v1.PodCondition
		for i := range conditions {
			if conditions[i].Type == rg.ConditionType {
				found = &conditions[i]
				break
			}
		}
		switch {
		case found == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		case found.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), found.Status))
		}
	}
	if len(msgs) > 0 {
		return v1.PodCondition{
			Type:    v1.PodReady,
			Status:  v1.ConditionFalse,
			Reason:  ReasonReadinessGatesNotReady,
			Message: strings.Join(msgs, ", "),
		}
	}
	return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
}

// initializedCondition is GeneratePodInitializedCondition.
func initializedCondition(spec *v1.PodSpec, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	if all == nil && len(spec.InitContainers) > 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: ReasonUnknownContainerStatuses}
	}
	var unknown, incomplete []string
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		st, ok := containerStatus(all, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		var done bool
		if isRestartableInitContainer(c) {
			done = st.Started != nil && *st.Started
		} else {
			done = st.Ready
		}
		if !done {
			incomplete = append(incomplete, c.Name)
		}
	}

	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: ReasonPodCompleted}
	}
	// A regular container that has started means the pod was initialized,
	// even while its sidecars restart.
	if hasAnyRegularContainerStarted(spec, all) {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	return containersCondition(v1.PodInitialized, ReasonContainersNotInitialized, unknown, "incomplete", incomplete)
}
