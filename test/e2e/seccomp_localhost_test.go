package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// denyMkdir is a seccomp profile that allows everything but mkdir, which
// fails with EPERM.
const denyMkdir = `{
  "defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
}
`

// TestSeccompLocalhost proves seccompProfile type Localhost as kubelet
// with containerd's CRI gives it: the pod's profile, a JSON file under
// --seccomp-profile-root, confines the container that sets none (mkdir
// fails with EPERM, the process is in seccomp filter mode) while a
// container of the same pod with its own RuntimeDefault profile is not
// affected; a profile that is not there keeps the container waiting in
// CreateContainerError naming the file (and `podvisor validate --config`
// warns of it), until the file appears.
func TestSeccompLocalhost(t *testing.T) {
	root := filepath.Join(os.TempDir(), "pv-e2e-seccomp-"+randHex(4))
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "profiles", "deny-mkdir.json"), []byte(denyMkdir), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDaemon(t, "--seccomp-profile-root", root)
	d.start()

	inside := func(pod, ctr, script, want string) {
		t.Helper()
		d.poll(pod+"/"+ctr+": "+script, 20*time.Second, func() (bool, string) {
			out, errOut, code := d.runCLI("", "exec", pod+"-"+node, "-c", ctr, "--", "sh", "-c", script)
			return code == 0 && out == want, fmt.Sprintf("exit %d: %q %s (want %q)", code, out, errOut, want)
		})
	}
	// mkdir's result, and the seccomp mode of the container's own process.
	const probe = `if mkdir /tmp/d$$ 2>/tmp/e$$; then echo mkdir=ok; else echo "mkdir=$(sed 's/.*: //' /tmp/e$$)"; fi; ` +
		`echo "seccomp=$(sed -n 's/^Seccomp:\t//p' /proc/1/status)"`

	d.writeManifest("confined.yaml", `apiVersion: v1
kind: Pod
metadata: {name: confined}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    seccompProfile: {type: Localhost, localhostProfile: profiles/deny-mkdir.json}
  containers:
  - {name: main, image: busybox, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
  - name: other
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    securityContext:
      seccompProfile: {type: RuntimeDefault}
`)
	d.waitPod("confined-"+node, 90*time.Second, "running", running)
	inside("confined", "main", probe, "mkdir=Operation not permitted\nseccomp=2\n")
	inside("confined", "other", probe, "mkdir=ok\nseccomp=2\n")

	// A profile that is not there: the container waits, naming the file.
	cmd, _ := json.Marshal([]string{"sh", "-c", probe + "; exec sleep 3600"})
	missing := `apiVersion: v1
kind: Pod
metadata: {name: missing}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ` + string(cmd) + `
    securityContext:
      seccompProfile: {type: Localhost, localhostProfile: profiles/later.json}
`
	later := filepath.Join(root, "profiles", "later.json")
	want := fmt.Sprintf("cannot load seccomp profile %q: open %s: no such file or directory", later, later)

	cfg := filepath.Join(d.dir, "validate-config.yaml")
	manifest := filepath.Join(d.dir, "missing.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nseccompProfileRoot: "+root+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(missing), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := d.runCLI("", "validate", "--node-name", node, "--config", cfg, manifest)
	if w := "spec.containers[0].securityContext.seccompProfile.localhostProfile: container main would wait in CreateContainerError: " + want; code != 0 || !strings.Contains(out, w) {
		t.Errorf("podvisor validate: exit %d, want 0 and %q:\n%s%s", code, w, out, errOut)
	}

	d.writeManifest("missing.yaml", missing)
	p := d.waitPod("missing-"+node, 60*time.Second, "waiting in CreateContainerError", func(p *v1.Pod) bool {
		return waitingReason(p, "main") == "CreateContainerError"
	})
	if w := containerStatus(p, "main").State.Waiting; !strings.Contains(w.Message, want) {
		t.Errorf("waiting message %q, want it to hold %q", w.Message, want)
	}
	d.poll("Failed event naming the profile", 20*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("missing-"+node, "Failed", want)
		return n > 0, strings.Join(msgs, "\n")
	})
	// The file appears: the next try creates the container, confined.
	if err := os.WriteFile(later, []byte(denyMkdir), 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitPod("missing-"+node, 90*time.Second, "running", running)
	inside("missing", "main", probe, "mkdir=Operation not permitted\nseccomp=2\n")

	for _, f := range []string{"confined", "missing"} {
		d.removeManifest(f + ".yaml")
	}
	for _, f := range []string{"confined", "missing"} {
		d.waitGone(f+"-"+node, 60*time.Second)
	}
}
