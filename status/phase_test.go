package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Container status shapes from kubelet's kubelet_pods_test.go.

func waitingState(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}
}

func waitingStateWithLastTermination(name string) v1.ContainerStatus {
	s := waitingState(name)
	s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 0}
	return s
}

func waitingStateWithNonZeroTermination(name string) v1.ContainerStatus {
	s := waitingState(name)
	s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: -1}
	return s
}

func runningState(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func startedState(name string) v1.ContainerStatus {
	s := runningState(name)
	started := true
	s.Started = &started
	return s
}

func stoppedState(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}
}

func succeededState(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}
}

func failedState(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: -1}}}
}

func ready(s v1.ContainerStatus) v1.ContainerStatus {
	s.Ready = true
	return s
}

func sts(s ...v1.ContainerStatus) []v1.ContainerStatus { return s }

var sidecarPolicy = v1.ContainerRestartPolicyAlways

func podSpec(policy v1.RestartPolicy, inits []v1.Container, names ...string) *v1.PodSpec {
	spec := &v1.PodSpec{NodeName: "machine", RestartPolicy: policy, InitContainers: inits}
	for _, n := range names {
		spec.Containers = append(spec.Containers, v1.Container{Name: n})
	}
	return spec
}

type phaseCase struct {
	name   string
	init   []v1.ContainerStatus
	status []v1.ContainerStatus
	want   v1.PodPhase
}

func runPhaseCases(t *testing.T, spec *v1.PodSpec, cases []phaseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Phase(spec, tc.init, tc.status); got != tc.want {
				t.Errorf("Phase = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestPhaseRestartAlways is kubelet's TestPodPhaseWithRestartAlways. The two
// "pod is terminal" cases take the static-pod answer: kubelet does not give
// static pods a terminal phase (TODO #116484), and podvisor's pods are all
// static.
func TestPhaseRestartAlways(t *testing.T) {
	spec := podSpec(v1.RestartPolicyAlways, nil, "containerA", "containerB")
	runPhaseCases(t, spec, []phaseCase{
		{"waiting", nil, nil, v1.PodPending},
		{"all running", nil, sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
		{"all stopped with restart always", nil, sts(stoppedState("containerA"), stoppedState("containerB")), v1.PodRunning},
		{"all succeeded, static pod stays running", nil, sts(succeededState("containerA"), succeededState("containerB")), v1.PodRunning},
		{"one failed, static pod stays running", nil, sts(succeededState("containerA"), failedState("containerB")), v1.PodRunning},
		{"mixed state #1 with restart always", nil, sts(runningState("containerA"), stoppedState("containerB")), v1.PodRunning},
		{"mixed state #2 with restart always", nil, sts(runningState("containerA")), v1.PodPending},
		{"mixed state #3 with restart always", nil, sts(runningState("containerA"), waitingState("containerB")), v1.PodPending},
		{"backoff crashloop container with restart always", nil, sts(runningState("containerA"), waitingStateWithLastTermination("containerB")), v1.PodRunning},
	})
}

// TestPhaseRestartAlwaysInitContainers is TestPodPhaseWithRestartAlwaysInitContainers.
func TestPhaseRestartAlwaysInitContainers(t *testing.T) {
	spec := podSpec(v1.RestartPolicyAlways, []v1.Container{{Name: "containerX"}}, "containerA", "containerB")
	runPhaseCases(t, spec, []phaseCase{
		{"empty, waiting", nil, nil, v1.PodPending},
		{"init container running", sts(runningState("containerX")), nil, v1.PodPending},
		{"init container terminated non-zero", sts(failedState("containerX")), nil, v1.PodPending},
		{"init container waiting, terminated zero", sts(waitingStateWithLastTermination("containerX")), nil, v1.PodPending},
		{"init container waiting, terminated non-zero", sts(waitingStateWithNonZeroTermination("containerX")), nil, v1.PodPending},
		{"init container waiting, not terminated", sts(waitingState("containerX")), nil, v1.PodPending},
		{"init container succeeded", sts(succeededState("containerX")), sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
	})
}

// TestPhaseRestartAlwaysRestartableInitContainers is
// TestPodPhaseWithRestartAlwaysRestartableInitContainers (terminal cases as
// for static pods).
func TestPhaseRestartAlwaysRestartableInitContainers(t *testing.T) {
	spec := podSpec(v1.RestartPolicyAlways, []v1.Container{{Name: "containerX", RestartPolicy: &sidecarPolicy}}, "containerA", "containerB")
	runPhaseCases(t, spec, []phaseCase{
		{"empty, waiting", nil, nil, v1.PodPending},
		{"restartable init container running", sts(runningState("containerX")), nil, v1.PodPending},
		{"restartable init container stopped", sts(stoppedState("containerX")), nil, v1.PodPending},
		{"restartable init container waiting, terminated zero", sts(waitingStateWithLastTermination("containerX")), nil, v1.PodPending},
		{"restartable init container waiting, terminated non-zero", sts(waitingStateWithNonZeroTermination("containerX")), nil, v1.PodPending},
		{"restartable init container waiting, not terminated", sts(waitingState("containerX")), nil, v1.PodPending},
		{"restartable init container started, 1/2 regular container running", sts(startedState("containerX")), sts(runningState("containerA")), v1.PodPending},
		{"restartable init container started, all regular containers running", sts(startedState("containerX")), sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
		{"restartable init container running, all regular containers running", sts(runningState("containerX")), sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
		{"restartable init container stopped, all regular containers running", sts(stoppedState("containerX")), sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
		{"backoff crashloop restartable init container, all regular containers running", sts(waitingStateWithLastTermination("containerX")), sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
		{"regular containers succeeded, sidecar failed, static pod stays running", sts(failedState("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodRunning},
		{"regular containers succeeded, sidecar succeeded, static pod stays running", sts(succeededState("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodRunning},
	})
}

// TestPhaseRestartAlwaysAndPodHasRun is TestPodPhaseWithRestartAlwaysAndPodHasRun.
func TestPhaseRestartAlwaysAndPodHasRun(t *testing.T) {
	spec := podSpec(v1.RestartPolicyAlways, []v1.Container{
		{Name: "containerX"},
		{Name: "containerY", RestartPolicy: &sidecarPolicy},
	}, "containerA")
	runPhaseCases(t, spec, []phaseCase{
		{"regular init containers, restartable init container and regular container are all running",
			sts(runningState("containerX"), runningState("containerY")), sts(runningState("containerA")), v1.PodPending},
		{"regular containers is stopped, restartable init container and regular int container are both running",
			sts(runningState("containerX"), runningState("containerY")), sts(stoppedState("containerA")), v1.PodPending},
		{"regular init container is succeeded, restartable init container is running, regular containers is stopped",
			sts(succeededState("containerX"), runningState("containerY")), sts(stoppedState("containerA")), v1.PodRunning},
		{"regular init container is succeeded, restartable init container and regular containers are both running",
			sts(succeededState("containerX"), runningState("containerY")), sts(runningState("containerA")), v1.PodRunning},
	})
}

// TestPhaseRestartNever is TestPodPhaseWithRestartNever.
func TestPhaseRestartNever(t *testing.T) {
	spec := podSpec(v1.RestartPolicyNever, nil, "containerA", "containerB")
	runPhaseCases(t, spec, []phaseCase{
		{"waiting", nil, nil, v1.PodPending},
		{"all running with restart never", nil, sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
		{"all succeeded with restart never", nil, sts(succeededState("containerA"), succeededState("containerB")), v1.PodSucceeded},
		{"all failed with restart never", nil, sts(failedState("containerA"), failedState("containerB")), v1.PodFailed},
		{"mixed state #1 with restart never", nil, sts(runningState("containerA"), succeededState("containerB")), v1.PodRunning},
		{"mixed state #2 with restart never", nil, sts(runningState("containerA")), v1.PodPending},
		{"mixed state #3 with restart never", nil, sts(runningState("containerA"), waitingState("containerB")), v1.PodPending},
	})
}

// TestPhaseRestartNeverInitContainers is TestPodPhaseWithRestartNeverInitContainers.
func TestPhaseRestartNeverInitContainers(t *testing.T) {
	spec := podSpec(v1.RestartPolicyNever, []v1.Container{{Name: "containerX"}}, "containerA", "containerB")
	runPhaseCases(t, spec, []phaseCase{
		{"empty, waiting", nil, nil, v1.PodPending},
		{"init container running", sts(runningState("containerX")), nil, v1.PodPending},
		{"init container terminated non-zero", sts(failedState("containerX")), nil, v1.PodFailed},
		{"init container waiting, terminated zero", sts(waitingStateWithLastTermination("containerX")), nil, v1.PodPending},
		{"init container waiting, terminated non-zero", sts(waitingStateWithNonZeroTermination("containerX")), nil, v1.PodFailed},
		{"init container waiting, not terminated", sts(waitingState("containerX")), nil, v1.PodPending},
		{"init container succeeded", sts(succeededState("containerX")), sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
	})
}

// TestPhaseRestartNeverRestartableInitContainers is
// TestPodPhaseWithRestartNeverRestartableInitContainers.
func TestPhaseRestartNeverRestartableInitContainers(t *testing.T) {
	spec := podSpec(v1.RestartPolicyNever, []v1.Container{{Name: "containerX", RestartPolicy: &sidecarPolicy}}, "containerA", "containerB")
	runPhaseCases(t, spec, []phaseCase{
		{"empty, waiting", nil, nil, v1.PodPending},
		{"restartable init container running", sts(runningState("containerX")), nil, v1.PodPending},
		{"restartable init container stopped", sts(stoppedState("containerX")), nil, v1.PodPending},
		{"restartable init container waiting, terminated zero", sts(waitingStateWithLastTermination("containerX")), nil, v1.PodPending},
		{"restartable init container waiting, terminated non-zero", sts(waitingStateWithNonZeroTermination("containerX")), nil, v1.PodPending},
		{"restartable init container waiting, not terminated", sts(waitingState("containerX")), nil, v1.PodPending},
		{"restartable init container started, one main container running", sts(startedState("containerX")), sts(runningState("containerA")), v1.PodPending},
		{"restartable init container started, main containers succeeded", sts(startedState("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodRunning},
		{"restartable init container running, main containers succeeded", sts(runningState("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodRunning},
		{"all containers succeeded", sts(succeededState("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodSucceeded},
		{"restartable init container terminated non-zero, main containers succeeded", sts(failedState("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodSucceeded},
		{"backoff crashloop restartable init container, main containers succeeded", sts(waitingStateWithLastTermination("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodSucceeded},
		{"backoff crashloop with non-zero restartable init container, main containers succeeded", sts(waitingStateWithNonZeroTermination("containerX")), sts(succeededState("containerA"), succeededState("containerB")), v1.PodSucceeded},
	})
}

// TestPhaseRestartOnFailure is TestPodPhaseWithRestartOnFailure.
func TestPhaseRestartOnFailure(t *testing.T) {
	spec := podSpec(v1.RestartPolicyOnFailure, nil, "containerA", "containerB")
	runPhaseCases(t, spec, []phaseCase{
		{"waiting", nil, nil, v1.PodPending},
		{"all running with restart onfailure", nil, sts(runningState("containerA"), runningState("containerB")), v1.PodRunning},
		{"all succeeded with restart onfailure", nil, sts(succeededState("containerA"), succeededState("containerB")), v1.PodSucceeded},
		{"all failed with restart onfailure", nil, sts(failedState("containerA"), failedState("containerB")), v1.PodRunning},
		{"mixed state #1 with restart onfailure", nil, sts(runningState("containerA"), succeededState("containerB")), v1.PodRunning},
		{"mixed state #2 with restart onfailure", nil, sts(runningState("containerA")), v1.PodPending},
		{"mixed state #3 with restart onfailure", nil, sts(runningState("containerA"), waitingState("containerB")), v1.PodPending},
		{"backoff crashloop container with restart onfailure", nil, sts(runningState("containerA"), waitingStateWithLastTermination("containerB")), v1.PodRunning},
	})
}
