package e2e

import (
	"testing"
	"time"
)

// holdManifests are the user's reproduction: a preStop hook whose command
// leaves a child holding its output (sleep 600 in the background), with a
// grace period of 5 s; and a readiness probe of the same kind.
const (
	holdHookManifest = `apiVersion: v1
kind: Pod
metadata: {name: hold-hook}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "sleep 600 & echo bye"]}
`
	holdProbeManifest = `apiVersion: v1
kind: Pod
metadata: {name: hold-probe}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["sh", "-c", "sleep 600 & echo ready"]}
      timeoutSeconds: 1
      periodSeconds: 1
`
)

// TestExecChildHoldsOutput: an exec whose child keeps its output open
// returns by its deadline. Once its manifest is removed, the pod with
// such a preStop hook is gone within its grace period and a small margin
// (it stayed stopping forever: the hook waited for output the child
// held); the readiness probe of that kind (timeout 1 s) answers, so its
// pod becomes Ready.
func TestExecChildHoldsOutput(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("hold-hook.yaml", holdHookManifest)
	d.writeManifest("hold-probe.yaml", holdProbeManifest)
	hook, probe := "hold-hook-"+node, "hold-probe-"+node
	d.waitPod(hook, 60*time.Second, "Running", running)
	removed := time.Now()
	d.removeManifest("hold-hook.yaml")
	// 5 s of grace (the hook's share, then kubelet's minimum of 2 s for
	// the signal), and the removal.
	d.waitGone(hook, 5*time.Second+10*time.Second)
	t.Logf("the pod with the preStop hook was gone %s after its manifest's removal", time.Since(removed).Round(100*time.Millisecond))
	d.waitPod(probe, 30*time.Second, "Ready", podReady)
}
