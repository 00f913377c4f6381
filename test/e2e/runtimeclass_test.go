package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/test/prereq"
	v1 "k8s.io/api/core/v1"
)

// runtimeClassPod is a pod of the given runtime class ("": none) that
// runs until stopped.
func runtimeClassPod(name, class string) string {
	rc := ""
	if class != "" {
		rc = "  runtimeClassName: " + class + "\n"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
%s  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, name, rc)
}

// crunWrapper is the OCI runtime the test's crun class names: it records
// each call, then runs crun. crun refuses a hybrid cgroup host whose
// unified hierarchy holds a controller ("cgroups in hybrid mode not
// supported"), so there it runs in a mount namespace of its own without
// that hierarchy, where crun sees cgroup v1 only; on a cgroup v2 or pure
// v1 host it runs crun as it is.
const crunWrapper = `#!/bin/sh
echo "$*" >> %[1]s
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
	exec unshare --mount --propagation private sh -c 'umount /sys/fs/cgroup/unified && exec "$0" "$@"' %[2]s "$@"
fi
exec %[2]s "$@"
`

// maskedKeysFS is the filesystem of the /dev/null bound over /proc/keys
// (a masked path) inside a container: runc binds the container's own
// /dev/null, on its /dev tmpfs; crun binds the host's, on devtmpfs.
func (d *daemon) maskedKeysFS(pod string) string {
	d.t.Helper()
	var fstype string
	d.poll(pod+": /proc/keys in its mountinfo", 20*time.Second, func() (bool, string) {
		out, errOut, code := d.runCLI("", "exec", pod, "--", "grep", " /proc/keys ", "/proc/self/mountinfo")
		if code != 0 {
			return false, fmt.Sprintf("exit %d: %s%s", code, out, errOut)
		}
		_, after, ok := strings.Cut(strings.TrimSpace(out), " - ")
		fstype, _, _ = strings.Cut(after, " ")
		return ok && fstype != "", out
	})
	return fstype
}

// TestRuntimeClass proves spec.runtimeClassName as kubelet and
// containerd's CRI give it, with the configuration file's runtimeClasses
// standing for the RuntimeClass objects and containerd's runtimes table:
// a pod of class crun (the runc shim with BinaryName a wrapper of crun)
// has its containers run by crun, as the wrapper's record of its calls
// and the container's own mounts show; a pod without a class still runs
// under runc; a class the node lacks keeps its pod waiting in
// ContainerCreating with kubelet's FailedCreatePodSandBox event naming
// the class and the configuration key; an edited runtimeClassName
// recreates the pod under the new class; and `podvisor validate --config`
// warns about the class the node lacks.
func TestRuntimeClass(t *testing.T) {
	crun, err := exec.LookPath("crun")
	if err != nil {
		prereq.Missing(t, "crun (apt-get install crun)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		prereq.Missing(t, "unshare (util-linux)")
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		prereq.Missing(t, "ctr (Debian's containerd package)")
	}
	d := newDaemon(t)
	calls := filepath.Join(d.dir, "crun-calls.log")
	wrapper := filepath.Join(d.dir, "crun-wrapper")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf(crunWrapper, calls, crun)), 0o755); err != nil {
		t.Fatal(err)
	}
	// Debian 12's crun (1.8.1) refuses a spec whose ociVersion is not
	// 1.0.x ("unknown version specified"), and podvisor's are runtime-spec
	// 1.3's: the class's base spec is the one README gives, containerd
	// 1.6's default spec (ociVersion 1.0.2-dev) as `ctr oci spec` prints it.
	baseJSON, err := exec.Command(ctr, "oci", "spec").Output()
	if err != nil {
		t.Fatalf("ctr oci spec: %v", err)
	}
	var base specs.Spec
	if err := json.Unmarshal(baseJSON, &base); err != nil || !strings.HasPrefix(base.Version, "1.0.") {
		t.Fatalf("ctr oci spec printed ociVersion %q (%v), want 1.0.x:\n%s", base.Version, err, baseJSON)
	}
	baseFile := filepath.Join(d.dir, "crun-base.json")
	if err := os.WriteFile(baseFile, baseJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(d.dir, "podvisor.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: podvisor.io/v1alpha1
kind: PodvisorConfiguration
runtimeClasses:
  crun:
    runtimeType: io.containerd.runc.v2
    options:
      BinaryName: `+wrapper+`
    baseRuntimeSpec: `+baseFile+`
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d.extraArgs = append(d.extraArgs, "--config", config)
	d.start()

	d.writeManifest("crun.yaml", runtimeClassPod("crun", "crun"))
	d.writeManifest("plain.yaml", runtimeClassPod("plain", ""))
	crunPod := d.waitPod("crun-"+node, 90*time.Second, "running", running)
	plainPod := d.waitPod("plain-"+node, 90*time.Second, "running", running)
	crunID, plainID := containerID(crunPod, "main"), containerID(plainPod, "main")

	// The wrapper created, and started, the crun pod's container and no
	// other.
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("the crun class's runtime was never called: %v", err)
	}
	var created bool
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[len(fields)-1] == crunID && strings.Contains(line, "create ") {
			created = true
		}
		if strings.Contains(line, plainID) {
			t.Errorf("the pod without a runtime class went through crun: %q", line)
		}
	}
	if !created {
		t.Errorf("no crun create of the crun pod's container %s; the wrapper saw:\n%s", crunID, b)
	}
	// Inside: crun set up the crun pod's mounts, runc the other's.
	if fs := d.maskedKeysFS("crun-" + node); fs != "devtmpfs" {
		t.Errorf("crun pod: /proc/keys masked by a /dev/null on %s, want devtmpfs (crun binds the host's)", fs)
	}
	if fs := d.maskedKeysFS("plain-" + node); fs != "tmpfs" {
		t.Errorf("pod without a class: /proc/keys masked by a /dev/null on %s, want tmpfs (runc binds the container's)", fs)
	}
	out, errOut, code := d.runCLI("", "describe", "pod", "crun-"+node)
	if code != 0 || !strings.Contains(out, "Runtime Class Name:  crun\n") {
		t.Errorf("podvisor describe: exit %d, want a Runtime Class Name line:\n%s%s", code, out, errOut)
	}

	// A class the node lacks: the pod waits before its sandbox, as under
	// kubelet.
	d.writeManifest("gvisor.yaml", runtimeClassPod("gvisor", "gvisor"))
	want := `Failed to create pod sandbox: runtimeclasses.node.k8s.io "gvisor" not found: podvisor's configuration has no runtimeClasses.gvisor`
	d.poll("FailedCreatePodSandBox naming the class", 60*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("gvisor-"+node, "FailedCreatePodSandBox", want)
		return n > 0, strings.Join(msgs, "\n")
	})
	p := d.waitPod("gvisor-"+node, 10*time.Second, "pending in ContainerCreating", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodPending && waitingReason(p, "main") == "ContainerCreating"
	})
	if cs := containerStatus(p, "main"); cs.ContainerID != "" {
		t.Errorf("a container was made for a class the node lacks: %+v", cs)
	}
	out, _, _ = d.runCLI("", "get", "pod", "gvisor-"+node)
	if !strings.Contains(out, "ContainerCreating") {
		t.Errorf("podvisor get does not show the pod in ContainerCreating:\n%s", out)
	}
	out, _, _ = d.runCLI("", "describe", "pod", "gvisor-"+node)
	if !strings.Contains(out, "FailedCreatePodSandBox") || !strings.Contains(out, `runtimeclasses.node.k8s.io "gvisor" not found`) {
		t.Errorf("podvisor describe does not say why the pod waits:\n%s", out)
	}

	// podvisor validate, against the node's configuration.
	out, errOut, code = d.runCLI("", "validate", "--node-name", node, "--config", config, d.manifests)
	wantWarn := filepath.Join(d.manifests, "gvisor.yaml") + `:5: spec.runtimeClassName: runtime class "gvisor" is not configured on this node (runtimeClasses.gvisor)`
	if code != 0 || !strings.Contains(out, "warning: "+wantWarn) || strings.Count(out, "spec.runtimeClassName") != 1 {
		t.Errorf("podvisor validate --config: exit %d, want one warning %q:\n%s%s", code, wantWarn, out, errOut)
	}

	// An edited runtimeClassName is a new pod: the old one goes, the new
	// one runs under crun.
	d.writeManifest("plain.yaml", runtimeClassPod("plain", "crun"))
	p = d.waitPod("plain-"+node, 90*time.Second, "recreated and running", func(p *v1.Pod) bool {
		return running(p) && p.UID != plainPod.UID
	})
	if rc := p.Spec.RuntimeClassName; rc == nil || *rc != "crun" {
		t.Errorf("recreated pod's runtimeClassName %v, want crun", rc)
	}
	if fs := d.maskedKeysFS("plain-" + node); fs != "devtmpfs" {
		t.Errorf("pod edited to class crun: /proc/keys masked by a /dev/null on %s, want devtmpfs (crun)", fs)
	}
	if b, _ := os.ReadFile(calls); !strings.Contains(string(b), containerID(p, "main")) {
		t.Errorf("crun never saw the recreated pod's container %s", containerID(p, "main"))
	}
}
