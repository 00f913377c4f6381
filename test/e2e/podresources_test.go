package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const podResourcesPod = `apiVersion: v1
kind: Pod
metadata: {name: podres}
spec:
  terminationGracePeriodSeconds: 1
  resources:
    requests: {cpu: 250m, memory: 64Mi}
    limits: {cpu: 500m, memory: 96Mi}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - name: MEM_LIMIT
      valueFrom: {resourceFieldRef: {resource: limits.memory}}
    - name: CPU_LIMIT_MILLI
      valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}
  - name: own
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    resources:
      limits: {memory: 32Mi}
`

// TestPodLevelResources proves spec.resources as kubelet applies
// pod-level resources: the pod cgroup has the pod's memory limit, CFS
// quota and shares (read on the host); a container without a limit of its
// own is bounded by the pod's (read inside it, in its cgroup), one with its
// own keeps it; resourceFieldRef gives the pod's limits; the QoS class is
// the pod's (Burstable).
func TestPodLevelResources(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("podres.yaml", podResourcesPod)
	name := "podres-" + node
	p := d.waitPod(name, 90*time.Second, "running", running)
	if p.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("qosClass %s, want Burstable", p.Status.QOSClass)
	}

	uid := string(p.UID)
	if v := cgroupValue(t, d.ns, uid, "", "memory.limit_in_bytes", "memory.max"); v != "100663296" {
		t.Errorf("pod cgroup memory limit %s, want the pod's 96Mi (100663296)", v)
	}
	if v := cgroupValue(t, d.ns, uid, "", "cpu.cfs_quota_us", "cpu.max"); v != "50000" && v != "50000 100000" {
		t.Errorf("pod cgroup cpu quota %s, want the pod's 500m (50000)", v)
	}
	if v := cgroupValue(t, d.ns, uid, "", "cpu.shares", "cpu.weight"); v != "256" && v != "10" {
		t.Errorf("pod cgroup cpu shares %s, want the pod's 250m (256 shares, weight 10)", v)
	}

	script := `d=/sys/fs/cgroup/memory; [ -d $d ] || d=/sys/fs/cgroup
cat $d/memory.limit_in_bytes 2>/dev/null || cat $d/memory.max`
	for _, c := range []struct{ name, want string }{{"main", "100663296"}, {"own", "33554432"}} {
		out, errOut, code := d.runCLI("", "exec", name, "-c", c.name, "--", "sh", "-c", script)
		if code != 0 || out != c.want+"\n" {
			t.Errorf("%s: memory limit inside %q (exit %d %s), want %s", c.name, out, code, errOut, c.want)
		}
	}
	q := cgroupValue(t, d.ns, uid, containerID(p, "main"), "cpu.cfs_quota_us", "cpu.max")
	if q != "50000" && q != "50000 100000" {
		t.Errorf("main: cpu quota %s, want the pod's 500m (50000)", q)
	}

	out, errOut, code := d.runCLI("", "exec", name, "-c", "main", "--", "sh", "-c", "echo $MEM_LIMIT $CPU_LIMIT_MILLI")
	if code != 0 || strings.TrimSpace(out) != "100663296 500" {
		t.Errorf("resourceFieldRef in main: %q (exit %d %s), want the pod's limits \"100663296 500\"", out, code, errOut)
	}

	d.removeManifest("podres.yaml")
	d.waitGone(name, 60*time.Second)
}
