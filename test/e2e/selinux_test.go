package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestSELinuxOptions proves seLinuxOptions as containerd's CRI treats them
// on a host without SELinux: a pod with the pod's and a container's
// options runs (the labels are ignored), and a level in a bad format keeps
// its container waiting in CreateContainerError with containerd's message.
func TestSELinuxOptions(t *testing.T) {
	if _, err := os.Stat("/sys/fs/selinux/enforce"); err == nil {
		t.Fatal("this test needs a host without SELinux")
	}
	d := newDaemon(t)
	d.start()

	d.writeManifest("labels.yaml", `apiVersion: v1
kind: Pod
metadata: {name: labels}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    seLinuxOptions: {type: spc_t, level: "s0:c1,c2"}
    seLinuxChangePolicy: MountOption
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
  - name: own
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    securityContext:
      seLinuxOptions: {user: system_u, role: system_r, type: container_t, level: "s0-s0:c0.c1023"}
`)
	d.waitPod("labels-"+node, 90*time.Second, "running", running)
	out, errOut, code := d.runCLI("", "exec", "labels-"+node, "-c", "own", "--", "echo", "ok")
	if code != 0 || out != "ok\n" {
		t.Errorf("exec: exit %d %q%s", code, out, errOut)
	}

	d.writeManifest("badlevel.yaml", `apiVersion: v1
kind: Pod
metadata: {name: badlevel}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    securityContext:
      seLinuxOptions: {level: "high"}
`)
	p := d.waitPod("badlevel-"+node, 90*time.Second, "CreateContainerError", func(p *v1.Pod) bool {
		w := containerStatus(p, "main").State.Waiting
		return w != nil && w.Reason == "CreateContainerError"
	})
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, `the format of 'level' "high" is not correct`) {
		t.Errorf("waiting message %q, want containerd's level error", msg)
	}

	for _, n := range []string{"labels", "badlevel"} {
		d.removeManifest(n + ".yaml")
	}
	for _, n := range []string{"labels", "badlevel"} {
		d.waitGone(n+"-"+node, 60*time.Second)
	}
}
