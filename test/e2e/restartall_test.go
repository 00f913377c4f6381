package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// restartAllPod has the shape of Kubernetes' RestartAllContainers example:
// a restartPolicy Never pod whose init container appends a line to an
// emptyDir file at each run, a sidecar whose exit 88 restarts all
// containers (its first run exits with firstExit after 3 s, its later ones
// sleep), and a main container that prints how many lines the file holds.
func restartAllPod(name string, firstExit int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 30
  initContainers:
  - name: setup
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo run >> /state/runs"]
    volumeMounts: [{name: state, mountPath: /state}]
  - name: watcher
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "if [ ! -e /state/fired ]; then touch /state/fired; sleep 3; exit %d; fi; exec sleep 3600"]
    restartPolicy: Always
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [88]}
    volumeMounts: [{name: state, mountPath: /state}]
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo runs $(wc -l < /state/runs); exec sleep 3600"]
    volumeMounts: [{name: state, mountPath: /state}]
  volumes:
  - name: state
    emptyDir: {}
`, name, firstExit)
}

func initStatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return v1.ContainerStatus{}
}

// TestRestartAllContainers proves the RestartAllContainers action of a
// restart policy rule as kubelet carries it out: the sidecar's exit 88
// stops the main container (Killing "killing", no grace beyond kubelet's
// 2 s although the pod asks 30 s) and the pod starts again from its init
// container in the same sandbox: the init container ran twice (the main
// container's second run reads two lines in the emptyDir), every container
// counts one restart, its last state RestartingAllContainers, the pod IP
// is kept, and the AllContainersRestarting condition is False once done.
// An exit code the rule does not match restarts the sidecar alone.
func TestRestartAllContainers(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("match.yaml", restartAllPod("match", 88))
	d.writeManifest("nomatch.yaml", restartAllPod("nomatch", 3))

	first := d.waitPod("match-"+node, 90*time.Second, "main running", func(p *v1.Pod) bool {
		return containerStatus(p, "main").State.Running != nil
	})
	ip := first.Status.PodIP
	began := time.Now()
	p := d.waitPod("match-"+node, 90*time.Second, "main running again after a restart of all containers", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the restart took %s: the main container was not stopped with kubelet's 2 s", took)
	}
	for _, cs := range []v1.ContainerStatus{initStatus(p, "setup"), initStatus(p, "watcher"), containerStatus(p, "main")} {
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 1 || last == nil || last.Reason != "RestartingAllContainers" || last.ExitCode != 137 {
			t.Errorf("%s: restartCount %d, last state %+v; want 1, RestartingAllContainers exit 137", cs.Name, cs.RestartCount, last)
		}
	}
	if got := d.logLines(p, "main", 0); countLines(got, "runs 1") != 1 {
		t.Errorf("main's first run logged %q, want \"runs 1\"", got)
	}
	d.poll("main's second run to log", 30*time.Second, func() (bool, string) {
		got := d.logLines(p, "main", 1)
		return countLines(got, "runs 2") == 1, fmt.Sprintf("%q, want \"runs 2\" (the init container ran again)", got)
	})
	if p.Status.PodIP != ip || ip == "" {
		t.Errorf("pod IP %q, was %q: the sandbox was not kept", p.Status.PodIP, ip)
	}
	if n, msgs := d.eventCount("match-"+node, "Killing", "killing"); n != 1 {
		t.Errorf("%d Killing \"killing\" events, want 1 (the main container): %q", n, msgs)
	}
	cond := false
	for _, c := range p.Status.Conditions {
		if c.Type == v1.AllContainersRestarting {
			cond = true
			if c.Status != v1.ConditionFalse {
				t.Errorf("AllContainersRestarting %+v once restarted, want False", c)
			}
		}
	}
	if !cond {
		t.Error("no AllContainersRestarting condition")
	}

	// Exit 3 is not in the rule: the sidecar restarts (restartPolicy
	// Always), nothing else.
	p = d.waitPod("nomatch-"+node, 90*time.Second, "the sidecar restarted", func(p *v1.Pod) bool {
		cs := initStatus(p, "watcher")
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	if cs := initStatus(p, "watcher"); cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("watcher's last state %+v, want exit 3", cs.LastTerminationState.Terminated)
	}
	id := containerID(p, "main")
	d.hold("the main and init containers not restarted", 3*time.Second, func() (bool, string) {
		p, err := d.pod("nomatch-" + node)
		if err != nil {
			return false, err.Error()
		}
		m, s := containerStatus(p, "main"), initStatus(p, "setup")
		return m.RestartCount == 0 && containerID(p, "main") == id && s.RestartCount == 0,
			fmt.Sprintf("main restartCount %d, setup restartCount %d", m.RestartCount, s.RestartCount)
	})
	if got := d.logLines(p, "main", 0); countLines(got, "runs 1") != 1 {
		t.Errorf("nomatch: main logged %q, want \"runs 1\"", got)
	}

	for _, n := range []string{"match", "nomatch"} {
		d.removeManifest(n + ".yaml")
	}
	for _, n := range []string{"match", "nomatch"} {
		d.waitGone(n+"-"+node, 60*time.Second)
	}
}
