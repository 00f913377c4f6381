package printers

import v1 "k8s.io/api/core/v1"

func runningState(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func startedState(name string) v1.ContainerStatus {
	s := runningState(name)
	started := true
	s.Started = &started
	return s
}

func ready(s v1.ContainerStatus) v1.ContainerStatus {
	s.Ready = true
	return s
}

var sidecarPolicy = v1.ContainerRestartPolicyAlways
