package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const kubeadmDir = "../../manifest/testdata/kubeadm-v1.37.2"

// TestKubeadmValidate: podvisor validate accepts the four manifests
// kubeadm init writes, unmodified.
func TestKubeadmValidate(t *testing.T) {
	requireEnv(t)
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(kubeadmDir, "*.yaml"))
	if err != nil || len(files) != 4 {
		t.Fatalf("kubeadm manifests %v (%v), want 4", files, err)
	}
	out, err := exec.Command(podvisorBin, append([]string{"validate", "--node-name", node}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("podvisor validate: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "ok: pod "); n != 4 {
		t.Errorf("podvisor validate accepted %d pods, want 4:\n%s", n, out)
	}
}

// TestKubeadmEtcdProbes runs kubeadm's etcd manifest with only its image,
// command and host volumes replaced: probetarget stands in for etcd's
// metrics listener on 127.0.0.1:2381, and the probes (httpGet on host
// 127.0.0.1, by port name, startupProbe with initialDelaySeconds),
// hostNetwork, priority, resources and the pod-level RuntimeDefault
// seccomp profile are kubeadm's own. The pod becomes Ready, and its
// process runs under a seccomp filter it inherited from the pod.
func TestKubeadmEtcdProbes(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	b, err := os.ReadFile(filepath.Join(kubeadmDir, "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod v1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		t.Fatal(err)
	}
	c := &pod.Spec.Containers[0]
	if c.StartupProbe == nil || c.LivenessProbe == nil || c.ReadinessProbe == nil || !pod.Spec.HostNetwork ||
		pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.SeccompProfile == nil || c.SecurityContext != nil {
		t.Fatalf("etcd.yaml is not the kubeadm manifest this test was written for")
	}
	c.Image = "busybox"
	c.Command = []string{"sh", "-c", `grep '^Seccomp:' /proc/self/status; exec /bin/probetarget -addr 127.0.0.1 -http 2381 -https -1 -tcp -1 -grpc -1`}
	c.VolumeMounts, pod.Spec.Volumes = nil, nil
	b, err = yaml.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("etcd.yaml", string(b))
	name := "etcd-" + node
	p := d.waitPod(name, 90*time.Second, "Ready", func(p *v1.Pod) bool {
		cs := containerStatus(p, "etcd")
		return running(p) && started(cs) && cs.Ready && podReady(p)
	})
	lines := d.logLines(p, "etcd", 0)
	if len(lines) == 0 || strings.Join(strings.Fields(lines[0]), " ") != "Seccomp: 2" {
		t.Errorf("the container's first line %q, want Seccomp: 2 (a filter, from the pod's RuntimeDefault)", lines)
	}
	// The startup and readiness probes asked /readyz on loopback.
	if n := countLines(lines, "http GET /readyz -> 200", `Host="127.0.0.1:2381"`, "remote=127.0.0.1:"); n < 2 {
		t.Errorf("%d /readyz probes from loopback in the target's log, want the startup probe's and the readiness probe's:\n%s", n, strings.Join(lines, "\n"))
	}
	if cs := containerStatus(p, "etcd"); cs.RestartCount != 0 {
		t.Errorf("restartCount %d", cs.RestartCount)
	}
}
