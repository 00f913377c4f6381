package probes

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Kind is the kind of a container probe.
type Kind int

const (
	// Liveness decides whether a running container is killed.
	Liveness Kind = iota
	// Readiness decides whether a started container is ready.
	Readiness
	// Startup gates liveness and readiness until the container started.
	Startup
)

// kinds is the order in which a container's probes are walked.
var kinds = [...]Kind{Liveness, Readiness, Startup}

// String returns kubelet's name of the kind, as used in event messages.
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Result is a probe's result after thresholds, as kubelet's results
// manager keeps it.
type Result int

const (
	// Unknown is a startup probe's result until it passes or fails.
	Unknown Result = iota
	// Success is a passing probe.
	Success
	// Failure is a failing probe.
	Failure
)

// String returns the result's name.
func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Execer runs a command in a running container. output is stdout and
// stderr combined (the prober keeps the first 10 KiB); exitCode is the
// command's; err is set only when the command could not be run (or ctx
// ended first). The command must stop when ctx ends.
type Execer interface {
	Exec(ctx context.Context, containerID string, cmd []string) (output []byte, exitCode int, err error)
}

// Target is one running container instance to probe or run a hook in.
type Target struct {
	PodUID, PodName, Namespace string
	// PodIP is the address HTTP, TCP and gRPC handlers dial when they name
	// no host: the pod's IP, or the node's for a hostNetwork pod. Empty
	// until known; a network probe without an address is an error.
	PodIP string
	// Container holds the probes, the named ports and the lifecycle hooks.
	Container *v1.Container
	// ContainerID names the instance; exec handlers run in it.
	ContainerID string
	// StartedAt is when this instance started; initialDelaySeconds counts
	// from it.
	StartedAt time.Time
}

// Seed is what a container instance's probes are known to have said before
// the manager saw it: a container adopted after a podvisor restart is
// neither re-gated nor killed for history that was lost. The zero Seed is
// a fresh container.
type Seed struct {
	// Started says the startup probe already passed: it is not run again,
	// and liveness and readiness start at once.
	Started bool
	// Ready is the last readiness result: it holds until the first
	// readiness runs past a threshold say otherwise.
	Ready bool
}

// Event is one probe run worth telling, as kubelet records it.
type Event struct {
	PodUID, Container, ContainerID string
	Kind                           Kind
	// Type is "Warning".
	Type string
	// Reason is "Unhealthy" (a failed or errored run) or "ProbeWarning"
	// (a run that passed with a warning, such as a redirect not followed).
	Reason string
	// Message is kubelet's text, for example "Liveness probe failed: HTTP
	// probe failed with statuscode: 500".
	Message string
}

// Event types and reasons, kubelet's.
const (
	EventWarning       = "Warning"
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
)

// Change is a change of a container instance's probe result once a
// threshold is reached (kubelet's results manager update). A Liveness or
// Startup Failure means the container must be killed; its probes then hold
// until a new ContainerID is added.
type Change struct {
	PodUID, Container, ContainerID string
	Kind                           Kind
	// Result is Success or Failure.
	Result Result
	// Message is the last failed run's output when Result is Failure;
	// empty for the readiness Failure of a terminating pod.
	Message string
}

// Status is what the probes say about one container instance.
type Status struct {
	// ContainerID is the instance the status is about; empty when the
	// manager knows no instance of the container.
	ContainerID string
	// Started is true once the startup probe passed, or at once without one.
	Started bool
	// Ready is true when started, the pod is not terminating, and the
	// readiness probe's result is Success (or there is none).
	Ready bool
	// Probes holds one entry per probe the container has.
	Probes map[Kind]ProbeStatus
}

// ProbeStatus is one probe of a container instance, for describe.
type ProbeStatus struct {
	// Result is the result after thresholds, the one decisions use.
	Result Result
	// Last is the last run's result, Unknown before the first run or when
	// it errored.
	Last Result
	// Message is the last run's output, or its error.
	Message string
	// Time is when the last run finished; zero before the first run.
	Time time.Time
}
