package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// cli runs the podvisor CLI against d, bounded, and returns its stdout and
// stderr.
func (d *daemon) cli(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, podvisorBin, append(args, "--socket", d.sock)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// TestRestart: `podvisor restart` starts a container waiting out a long
// crash back-off at once and its next back-off is 10 s again; -c restarts
// one container of two (a Killing event says why) and leaves the other's
// run alone; a completed Never pod is refused.
func TestRestart(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("crash.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: crash
spec:
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exit 1"]
`)
	d.writeManifest("two.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: two
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: a
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
  - name: b
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`)
	d.writeManifest("done.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: done
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["true"]
`)
	crash, two, done := "crash-"+node, "two-"+node, "done-"+node
	backOff := func(p *v1.Pod, delay string) bool {
		w := containerStatus(p, "main").State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff" && strings.Contains(w.Message, "back-off "+delay+" ")
	}

	// The completed Never pod: refused, saying why.
	d.waitPod(done, 60*time.Second, "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	if out, errOut, err := d.cli("restart", "done"); err == nil || !strings.Contains(errOut, "has completed (phase Succeeded, restartPolicy Never)") {
		t.Errorf("restart of a completed pod: err %v, stdout %q, stderr %q", err, out, errOut)
	}
	if _, errOut, err := d.cli("restart", "two", "-c", "nope"); err == nil || !strings.Contains(errOut, `container "nope" is not in the pod (its containers: a, b)`) {
		t.Errorf("restart -c nope: err %v, stderr %q", err, errOut)
	}

	// -c a: a runs again, b keeps its run.
	p := d.waitPod(two, 60*time.Second, "both running", func(p *v1.Pod) bool { return running(p) })
	a0, b0 := containerID(p, "a"), containerID(p, "b")
	out, errOut, err := d.cli("restart", "two", "-c", "a")
	if err != nil || strings.TrimSpace(out) != "container a of pod/"+two+" restarted" {
		t.Fatalf("restart -c a: err %v, stdout %q, stderr %q", err, out, errOut)
	}
	p = d.waitPod(two, 30*time.Second, "a restarted", func(p *v1.Pod) bool {
		cs := containerStatus(p, "a")
		return cs.RestartCount == 1 && cs.State.Running != nil && containerID(p, "a") != a0
	})
	if got := containerID(p, "b"); got != b0 || containerStatus(p, "b").RestartCount != 0 {
		t.Errorf("b was restarted: %s → %s, restartCount %d", b0, got, containerStatus(p, "b").RestartCount)
	}
	if term := containerStatus(p, "a").LastTerminationState.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("a's last state %+v, want the exit 0 of its TERM trap", term)
	}
	if n, msgs := d.eventCount(two, "Killing", "Stopping container a: restarted by podvisor restart"); n != 1 {
		t.Errorf("Killing events of a: %v", msgs)
	}
	if n, msgs := d.eventCount(two, "Killing", "container b"); n != 0 {
		t.Errorf("b was killed: %v", msgs)
	}

	// Let the crash back-off grow to 40 s (0 s, 10 s, 20 s before).
	p = d.waitPod(crash, 90*time.Second, "a 40 s back-off", func(p *v1.Pod) bool { return backOff(p, "40s") })
	restarts := containerStatus(p, "main").RestartCount
	asked := time.Now()
	if out, errOut, err := d.cli("restart", "crash"); err != nil || strings.TrimSpace(out) != "pod/"+crash+" restarted" {
		t.Fatalf("restart: err %v, stdout %q, stderr %q", err, out, errOut)
	}
	d.waitPod(crash, 5*time.Second, "restarted at once", func(p *v1.Pod) bool {
		return containerStatus(p, "main").RestartCount == restarts+1
	})
	if took := time.Since(asked); took > 5*time.Second {
		t.Errorf("restart took %s", took)
	}
	p = d.waitPod(crash, 10*time.Second, "a 10 s back-off after the restart", func(p *v1.Pod) bool { return backOff(p, "10s") })
	if got := containerStatus(p, "main").RestartCount; got != restarts+1 {
		t.Errorf("restartCount %d, want %d", got, restarts+1)
	}
}
