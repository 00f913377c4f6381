package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// subPathExprPod mounts hostPath dir at /out with subPathExpr expr, with
// env POD_NAME from the downward API plus extraEnv, and runs script.
func subPathExprPod(name, dir, expr, extraEnv, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
%s    volumeMounts: [{name: out, mountPath: /out, subPathExpr: %q}]
  volumes:
  - name: out
    hostPath: {path: %s, type: Directory}
`, name, script, extraEnv, expr, dir)
}

// TestSubPathExpr proves volumeMounts' subPathExpr as kubelet expands it:
// from the container's env (a downward API value and a plain one), the
// directory made inside the volume, a file the container writes there
// seen on the host at the expanded path; an unset variable, and a value
// that makes the path leave the volume, keep the container waiting in
// CreateContainerConfigError with kubelet's messages.
func TestSubPathExpr(t *testing.T) {
	d := newDaemon(t)
	dir := d.hostDir("subpathexpr")
	d.start()

	name := "spe-" + node
	d.writeManifest("spe.yaml", subPathExprPod("spe", dir, "$(POD_NAME)/$(KIND)",
		"    - {name: KIND, value: logs}\n",
		"echo inside > /out/hello && sleep 3600"))
	d.waitPod(name, 90*time.Second, "running", running)
	host := filepath.Join(dir, name, "logs", "hello")
	d.poll("the file written in the subPathExpr dir, on the host", 20*time.Second, func() (bool, string) {
		b, err := os.ReadFile(host)
		return err == nil && string(b) == "inside\n", fmt.Sprintf("%s: %q %v", host, b, err)
	})

	for _, f := range []struct {
		file, name, expr, env, want string
	}{
		{"missing.yaml", "spemissing", "$(POD_NAME)/$(NOPE)", "", "missing value for NOPE"},
		{"up.yaml", "speup", "$(UP)/x", "    - {name: UP, value: \"..\"}\n", "unable to provision SubPath `../x`: must not contain '..'"},
	} {
		d.writeManifest(f.file, subPathExprPod(f.name, dir, f.expr, f.env, "sleep 3600"))
		p := d.waitPod(f.name+"-"+node, 90*time.Second, "waiting in CreateContainerConfigError", func(p *v1.Pod) bool {
			return waitingReason(p, "main") == "CreateContainerConfigError"
		})
		if w := containerStatus(p, "main").State.Waiting; w.Message != f.want {
			t.Errorf("%s: waiting message %q, want %q", f.name, w.Message, f.want)
		}
		d.poll(f.name+": Failed event with the reason", 20*time.Second, func() (bool, string) {
			n, msgs := d.eventCount(f.name+"-"+node, "Failed", "Error: "+f.want)
			return n > 0, strings.Join(msgs, "\n")
		})
	}
	if _, err := os.Stat(filepath.Join(d.dir, "host", "x")); err == nil {
		t.Error("a directory was made outside the volume")
	}
	for _, f := range []string{"spe.yaml", "missing.yaml", "up.yaml"} {
		d.removeManifest(f)
	}
	for _, n := range []string{"spe", "spemissing", "speup"} {
		d.waitGone(n+"-"+node, 60*time.Second)
	}
}
