package main

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestPodsSummary(t *testing.T) {
	pod := func(phase v1.PodPhase) v1.Pod { return v1.Pod{Status: v1.PodStatus{Phase: phase}} }
	for _, tc := range []struct {
		pods []v1.Pod
		want string
	}{
		{nil, "0 pods: 0 running, 0 pending, 0 failed"},
		{[]v1.Pod{pod(v1.PodRunning)}, "1 pod: 1 running, 0 pending, 0 failed"},
		{[]v1.Pod{pod(v1.PodRunning), pod(v1.PodPending), pod(""), pod(v1.PodFailed)}, "4 pods: 1 running, 2 pending, 1 failed"},
		{[]v1.Pod{pod(v1.PodSucceeded), pod(v1.PodRunning)}, "2 pods: 1 running, 0 pending, 0 failed, 1 succeeded"},
	} {
		if got := podsSummary(tc.pods); got != tc.want {
			t.Errorf("podsSummary = %q, want %q", got, tc.want)
		}
	}
}
