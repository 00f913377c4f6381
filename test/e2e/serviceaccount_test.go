package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// saPod names a service account and asks for its token, as many
// DaemonSets' pod templates do; its container reads the name through the
// downward API.
const saPod = `apiVersion: v1
kind: Pod
metadata:
  name: sapod
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: true
  serviceAccountName: app-sa
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
`

// saTokenDir is where a token is mounted in a pod the apiserver admitted:
// a static pod has none.
const saTokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// TestServiceAccountName runs a pod that names a service account, as
// kubelet runs such a static pod: it is Running, reads the name through
// fieldRef spec.serviceAccountName, has no service account token directory
// (kubelet mounts none: the apiserver's ServiceAccount admission adds the
// token volume, and a static pod never passes it), and gets exactly one
// warning event saying so; podvisor validate prints that warning at the
// field's line and exits 0.
func TestServiceAccountName(t *testing.T) {
	requireEnv(t)
	d := newDaemon(t)
	d.start()
	d.writeManifest("sa.yaml", saPod)
	pod := "sapod-" + node
	d.waitPod(pod, 60*time.Second, "Running", running)

	if env := d.containerEnv(pod); env["SA"] != "app-sa" {
		t.Errorf("in the container SA=%q, want app-sa (fieldRef spec.serviceAccountName)", env["SA"])
	}
	// Neither the token directory nor anything of it: a test -e that the
	// shell would answer for a symlink too.
	for _, dir := range []string{saTokenDir, "/run/secrets/kubernetes.io", "/var/run/secrets"} {
		out, errOut, code := d.runCLI("", "exec", pod, "--", "sh", "-c", fmt.Sprintf("test -e %s || test -L %s; echo $?", dir, dir))
		if code != 0 || strings.TrimSpace(out) != "1" {
			t.Errorf("in the container %s: test -e said %q (exit %d: %s), want 1: nothing there", dir, out, code, errOut)
		}
	}

	const want = `spec.serviceAccountName: service account "app-sa": no token is mounted (a static pod gets none, as under kubelet); automountServiceAccountToken: true is ignored`
	d.poll("the service account warning event", 20*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(pod, "FieldIgnored", want)
		return n >= 1, strings.Join(msgs, "\n")
	})
	// One event for the three fields, with nothing else of them.
	var about []string
	for _, e := range d.podEvents(pod) {
		if e.Type == v1.EventTypeWarning && (strings.Contains(e.Message, "serviceAccount") || strings.Contains(e.Message, "ServiceAccount")) {
			about = append(about, fmt.Sprintf("%s: %s (x%d)", e.Reason, e.Message, e.Count))
		}
	}
	if len(about) != 1 || !strings.HasSuffix(about[0], want+" (x1)") {
		t.Errorf("warning events about the service account:\n%s\nwant one: FieldIgnored: %s", strings.Join(about, "\n"), want)
	}

	path := filepath.Join(d.manifests, "sa.yaml")
	line := 0
	for i, l := range strings.Split(saPod, "\n") {
		if strings.HasPrefix(l, "  serviceAccountName:") {
			line = i + 1
		}
	}
	out, errOut, code := d.runCLI("", "validate", "--node-name", node, path)
	if w := fmt.Sprintf("warning: %s:%d: %s\n", path, line, want); code != 0 || !strings.Contains(out, w) || strings.Count(out, "warning: ") != 1 {
		t.Errorf("validate: exit %d, output %q (stderr %q), want exit 0 and the one warning %q", code, out, errOut, w)
	}
}
