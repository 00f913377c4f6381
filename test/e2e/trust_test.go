package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	v1 "k8s.io/api/core/v1"
)

const trustPod = `apiVersion: v1
kind: Pod
metadata: {name: ww}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "%s"]
`

// TestInsecureManifestRefused: a world-writable manifest is not started
// (an InvalidManifest event and podvisor validate say why) and is started
// once fixed with chmod; a running pod whose file becomes world-writable
// and is rewritten keeps running its last good spec. A manifest naming a
// capability with the CAP_ prefix is refused likewise.
func TestInsecureManifestRefused(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()

	// Written world-writable from the start, renamed in.
	path := filepath.Join(d.manifests, "ww.yaml")
	tmp := filepath.Join(d.dir, ".ww.yaml")
	os.WriteFile(tmp, []byte(strings.Replace(trustPod, "%s", "3600", 1)), 0o644)
	if err := os.Chmod(tmp, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("caps.yaml", `apiVersion: v1
kind: Pod
metadata: {name: caps}
spec:
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    securityContext: {capabilities: {add: [CAP_NET_ADMIN]}}
`)
	d.poll("InvalidManifest events for both files", 20*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(node, "InvalidManifest", path+": not used: "+path+": mode 0666 is group- or world-writable")
		c, _ := d.eventCount(node, "InvalidManifest", `capabilities.add[0]: "CAP_NET_ADMIN": capability names have no CAP_ prefix`)
		return n > 0 && c > 0, strings.Join(msgs, "\n")
	})
	for _, name := range []string{"ww", "caps"} {
		if _, err := d.pod(name); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("pod %s: %v, want not found", name, err)
		}
	}
	out, _, code := d.runCLI("", "validate", "--node-name", node, path)
	if code != 1 || !strings.Contains(out, path+": not used: "+path+": mode 0666") {
		t.Errorf("podvisor validate: exit %d: %s", code, out)
	}
	if _, _, code := d.runCLI("", "validate", "--node-name", node, "--allow-insecure-manifests", path); code != 0 {
		t.Errorf("podvisor validate --allow-insecure-manifests: exit %d", code)
	}

	// Fixed: started.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	p := d.waitPod("ww", 30*time.Second, "running once its file is fixed", running)
	id := containerID(p, "main")

	// Made world-writable and rewritten in place: the pod keeps its spec.
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(trustPod, "%s", "3601", 1)), 0o666); err != nil {
		t.Fatal(err)
	}
	d.poll("an InvalidManifest event on the running pod", 20*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(p.Name, "InvalidManifest", "mode 0666 is group- or world-writable")
		return n > 0, strings.Join(msgs, "\n")
	})
	p, err := d.pod("ww")
	if err != nil {
		t.Fatal(err)
	}
	if got := containerID(p, "main"); got != id || containerStatus(p, "main").RestartCount != 0 || !running(p) {
		t.Errorf("the running pod changed: container %s (was %s), status %+v", got, id, p.Status.ContainerStatuses)
	}
	if cmd := p.Spec.Containers[0].Command; len(cmd) != 2 || cmd[1] != "3600" {
		t.Errorf("spec command %v, want the last good one (sleep 3600)", cmd)
	}
}

// TestLogSymlinkNotFollowed: a symlink planted where a container's next
// log file goes (pointing at a passwd-like file of root's) is not
// followed: the container runs again, the file keeps its content, and the
// link stays a link.
func TestLogSymlinkNotFollowed(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("flap.yaml", `apiVersion: v1
kind: Pod
metadata: {name: flap}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo secret-overwritten; sleep 1; exit 1"]
`)
	p := d.waitPod("flap", 30*time.Second, "first run logged", func(p *v1.Pod) bool {
		return p.UID != "" && len(d.logLines(p, "main", 0)) > 0
	})
	secret := filepath.Join(d.dir, "passwd")
	const content = "root:x:0:0:root:/root:/bin/sh\n"
	if err := os.WriteFile(secret, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(d.logs, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "main", "1.log")
	if err := os.Symlink(secret, next); err != nil {
		t.Fatal(err)
	}
	d.waitPod("flap", 40*time.Second, "its second run to have ended", func(p *v1.Pod) bool {
		return containerStatus(p, "main").RestartCount >= 2
	})
	if b, err := os.ReadFile(secret); err != nil || string(b) != content {
		t.Errorf("the planted link's target was written: %q, %v", b, err)
	}
	// The link may be gone (podvisor removes the logs of runs older than
	// the previous one); it must not have been replaced by a file.
	if fi, err := os.Lstat(next); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s was replaced by a %v", next, fi.Mode())
	}
}
