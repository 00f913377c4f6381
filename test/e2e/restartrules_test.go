package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// restartRulesPod is a restartPolicy Never pod whose container (own
// restartPolicy Never, rule: Restart on exit code 42) counts its runs in an
// emptyDir and exits with firstExit on its first run, 0 after.
func restartRulesPod(name string, firstExit int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "n=$(cat /state/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /state/n; echo run $n; [ $n -ge 2 ] && exit 0; exit %d"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
    volumeMounts: [{name: state, mountPath: /state}]
  volumes:
  - name: state
    emptyDir: {}
`, name, firstExit)
}

// TestContainerRestartRules proves restartPolicyRules as kubelet's
// ContainerRestartRules: in a restartPolicy Never pod, a container whose
// exit code matches its Restart rule runs again (its second run, which
// reads the count its first left in the emptyDir, logs "run 2" and
// succeeds: the pod Succeeded, restartCount 1); one whose exit code does
// not match follows its own restartPolicy Never (the pod Failed, no
// restart). RestartAllContainers has its own test (restartall_test.go).
func TestContainerRestartRules(t *testing.T) {
	d := newDaemon(t)
	d.start()

	d.writeManifest("match.yaml", restartRulesPod("match", 42))
	d.writeManifest("nomatch.yaml", restartRulesPod("nomatch", 1))
	p := d.waitPod("match-"+node, 90*time.Second, "Succeeded after one restart", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded
	})
	cs := containerStatus(p, "main")
	if cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 42 {
		t.Errorf("match: restartCount %d, state %+v, last %+v; want 1 restart after exit 42, then 0", cs.RestartCount, cs.State, cs.LastTerminationState)
	}
	if lines := d.logLines(p, "main", 1); countLines(lines, "run 2") != 1 {
		t.Errorf("match: the second run logged %q, want \"run 2\"", lines)
	}

	p = d.waitPod("nomatch-"+node, 90*time.Second, "Failed", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed
	})
	if cs := containerStatus(p, "main"); cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 {
		t.Errorf("nomatch: restartCount %d, state %+v; want exit 1, not restarted", cs.RestartCount, cs.State)
	}

	for _, n := range []string{"match", "nomatch"} {
		d.removeManifest(n + ".yaml")
	}
	for _, n := range []string{"match", "nomatch"} {
		d.waitGone(n+"-"+node, 60*time.Second)
	}
}
