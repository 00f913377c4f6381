package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// startErrorPod is a pod whose container (or, with init, init container)
// runs a command that is not in the image: runc refuses to start it.
func startErrorPod(name string, policy v1.RestartPolicy, init bool) string {
	bad := `  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["/nonexistent"]
`
	containers := "  containers:\n" + bad
	if init {
		containers = "  initContainers:\n" + bad + `  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 1
%s`, name, policy, containers)
}

// startError reports whether t is a run the runtime refused to start, as
// kubelet shows it on containerd's CRI: reason StartError, exit code 128,
// the runtime's error (naming the command) as its message.
func startError(t *v1.ContainerStateTerminated) bool {
	return t != nil && t.Reason == "StartError" && t.ExitCode == 128 && strings.Contains(t.Message, "/nonexistent")
}

// TestStartError proves kubelet's handling of a container the runtime
// refuses to start (a command not in the image): the failed start is a run
// that ended (terminated StartError, exit code 128, the runtime's error),
// it counts as a restart, and the restart policy decides what follows.
// With Always the container restarts at once, then waits out kubelet's
// back-off (CrashLoopBackOff, restartCount growing, a Failed event for
// each start and no Started); an init container does the same (the pod
// Init:CrashLoopBackOff); with Never the container ends terminated and the
// pod Failed. No container of the failed starts is left behind.
func TestStartError(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("always.yaml", startErrorPod("starterr-always", v1.RestartPolicyAlways, false))
	d.writeManifest("never.yaml", startErrorPod("starterr-never", v1.RestartPolicyNever, false))
	d.writeManifest("init.yaml", startErrorPod("starterr-init", v1.RestartPolicyAlways, true))

	p := d.waitPod("starterr-never-"+node, 60*time.Second, "Failed", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed
	})
	if cs := containerStatus(p, "main"); !startError(cs.State.Terminated) || cs.RestartCount != 0 || cs.LastTerminationState.Terminated != nil {
		t.Errorf("never: state %+v, restartCount %d, last %+v; want terminated StartError 128, no restart", cs.State, cs.RestartCount, cs.LastTerminationState)
	}

	// The first restart is at once, the second after kubelet's 10 s.
	p = d.waitPod("starterr-always-"+node, 60*time.Second, "CrashLoopBackOff after 2 refused restarts", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs.RestartCount >= 2 && waitingReason(p, "main") == "CrashLoopBackOff"
	})
	cs := containerStatus(p, "main")
	if !startError(cs.LastTerminationState.Terminated) || started(cs) || cs.Ready {
		t.Fatalf("always: last state %+v, started %v; want StartError 128, never started", cs.LastTerminationState.Terminated, started(cs))
	}
	t.Logf("always: restartCount %d, waiting %q, last state %s %d %q", cs.RestartCount, cs.State.Waiting.Message,
		cs.LastTerminationState.Terminated.Reason, cs.LastTerminationState.Terminated.ExitCode, cs.LastTerminationState.Terminated.Message)
	d.poll("a Failed event for each refused start", 10*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("starterr-always-"+node, "Failed", "/nonexistent")
		return n >= int(cs.RestartCount)+1, strings.Join(msgs, "\n")
	})
	if n, msgs := d.eventCount("starterr-always-"+node, "Started", ""); n != 0 {
		t.Errorf("always: a refused start told as Started: %v", msgs)
	}

	p = d.waitPod("starterr-init-"+node, 30*time.Second, "Init:CrashLoopBackOff", func(p *v1.Pod) bool {
		cs := initStatus(p, "main")
		return cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	if ics := initStatus(p, "main"); !startError(ics.LastTerminationState.Terminated) || waitingReason(p, "app") != "PodInitializing" {
		t.Errorf("init: last state %+v, app waiting %q; want StartError, PodInitializing", ics.LastTerminationState.Terminated, waitingReason(p, "app"))
	}
	out, errOut, code := d.runCLI("", "get", "pods")
	for _, want := range []string{"Init:CrashLoopBackOff", "CrashLoopBackOff", "StartError"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("podvisor get pods: exit %d, no %s:\n%s%s", code, want, out, errOut)
		}
	}

	// Between attempts no container is left: each refused one is removed
	// as an ended run is.
	d.poll("no container left between refused starts", 10*time.Second, func() (bool, string) {
		ctrs := d.containers()
		return len(ctrs) == 0, fmt.Sprint(ctrs)
	})
	for _, n := range []string{"always", "never", "init"} {
		d.removeManifest(n + ".yaml")
	}
	for _, n := range []string{"always", "never", "init"} {
		d.waitGone("starterr-"+n+"-"+node, 30*time.Second)
	}
}
