package cli

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestDescribeStuckLine: describe's first line names a crash back-off and
// ends with the last lines of the run that ended, asked of the logs API
// (previous run, tailLines) and escaped; a pod that is fine has none.
func TestDescribeStuckLine(t *testing.T) {
	crash := kubectlPod("default", "crash", nil, "app")
	crash.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	crash.Status.ContainerStatuses[0].LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}
	fine := kubectlPod("default", "fine", nil, "app")
	fine.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	f := &fakeAPI{pods: []v1.Pod{crash, fine}}
	socket := f.serve(t)

	out, errOut, code := runCLI(t, "describe", "pod", "crash", "--socket", socket)
	first, _, _ := strings.Cut(out, "\n")
	want := `Stuck: back-off restarting container "app" (last exit 2, Error); last log lines: "2026-01-02T03:04:05.000000001Z \x1b[31mred\x1b[0m from app"`
	if code != 0 || first != want {
		t.Errorf("describe pod crash: exit %d, first line\n%q, want\n%q\nstderr: %s", code, first, want, errOut)
	}
	q := f.recorded("log")
	if len(q) != 1 || q[0].Get("container") != "app" || q[0].Get("previous") != "true" || q[0].Get("tailLines") != "3" {
		t.Errorf("log queries %v, want one of container app's previous run, tailLines 3", q)
	}

	out, _, _ = runCLI(t, "describe", "pod", "fine", "--socket", socket)
	if !strings.HasPrefix(out, "Name:") {
		t.Errorf("describe pod fine starts with %q, want Name:", strings.SplitN(out, "\n", 2)[0])
	}
}
