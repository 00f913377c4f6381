package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// propagationPod is a pod whose container mounts hostPath src at /host
// with mountPropagation prop, running script.
func propagationPod(name, src, prop string, privileged bool, script string) string {
	sc := ""
	if privileged {
		sc = "    securityContext: {privileged: true}\n"
	}
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
%s    volumeMounts: [{name: h, mountPath: /host, mountPropagation: %s}]
  volumes:
  - name: h
    hostPath: {path: %s, type: Directory}
`, name, script, sc, prop, src)
}

// propagationMount makes dir a mount of its own with the given
// propagation (unix.MS_SHARED or unix.MS_PRIVATE), whatever the test's
// mount namespace does with its parent; it and whatever propagated
// beneath it are detached when the test ends.
func propagationMount(t *testing.T, dir string, flag uintptr) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s on itself: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if err := unix.Mount("", dir, "", flag, ""); err != nil {
		t.Fatalf("set propagation of %s: %v", dir, err)
	}
}

// TestMountPropagation proves volumeMounts' mountPropagation as kubelet
// with containerd's CRI gives it: with HostToContainer a tmpfs the host
// mounts beneath the hostPath after the container started shows inside
// it (rslave); a privileged container's Bidirectional mount made beneath
// its mount point shows on the host (rshared); Bidirectional without
// privileged is refused by validation naming the field; and a source on a
// private mount keeps the container waiting in CreateContainerError with
// containerd's reason.
func TestMountPropagation(t *testing.T) {
	d := newDaemon(t)
	shared, bidi, private := d.hostDir("shared"), d.hostDir("bidi"), d.hostDir("private")
	propagationMount(t, shared, unix.MS_SHARED)
	propagationMount(t, bidi, unix.MS_SHARED)
	propagationMount(t, private, unix.MS_PRIVATE)
	d.start()

	// Validation: Bidirectional needs a privileged container.
	vdir := filepath.Join(d.dir, "validate")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		file, manifest, want string
	}{
		{"htc.yaml", propagationPod("v1", shared, "HostToContainer", false, "true"), ""},
		{"bidi-priv.yaml", propagationPod("v2", bidi, "Bidirectional", true, "true"), ""},
		{"bidi.yaml", propagationPod("v3", bidi, "Bidirectional", false, "true"),
			"bidi.yaml:11: spec.containers[0].volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"},
	} {
		path := filepath.Join(vdir, v.file)
		if err := os.WriteFile(path, []byte(v.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := d.runCLI("", "validate", "--node-name", node, path)
		if v.want == "" && code != 0 || v.want != "" && (code != 1 || !strings.Contains(out+errOut, v.want)) {
			t.Errorf("podvisor validate %s: exit %d, want %q:\n%s%s", v.file, code, v.want, out, errOut)
		}
	}

	// HostToContainer: a mount the host makes after the start propagates in.
	d.writeManifest("htc.yaml", propagationPod("htc", shared, "HostToContainer", false, "sleep 3600"))
	d.waitPod("htc-"+node, 90*time.Second, "running", running)
	sub := filepath.Join(shared, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", sub, err)
	}
	if err := os.WriteFile(filepath.Join(sub, "hello"), []byte("from-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.poll("the host's tmpfs inside the HostToContainer container", 20*time.Second, func() (bool, string) {
		out, errOut, code := d.runCLI("", "exec", "htc-"+node, "--", "sh", "-c", "grep ' /host/sub tmpfs ' /proc/mounts >/dev/null && cat /host/sub/hello")
		return code == 0 && out == "from-host\n", fmt.Sprintf("exit %d: %s%s", code, out, errOut)
	})

	// Bidirectional: a mount the privileged container makes propagates out.
	d.writeManifest("bidi.yaml", propagationPod("bidi", bidi, "Bidirectional", true,
		"mkdir -p /host/sub && mount -t tmpfs -o size=1m tmpfs /host/sub && echo from-container > /host/sub/hello && sleep 3600"))
	d.waitPod("bidi-"+node, 90*time.Second, "running", running)
	bsub := filepath.Join(bidi, "sub")
	d.poll("the container's tmpfs on the host", 20*time.Second, func() (bool, string) {
		mounted, err := mountinfo.Mounted(bsub)
		if err != nil || !mounted {
			return false, fmt.Sprintf("%s mounted %v: %v", bsub, mounted, err)
		}
		b, err := os.ReadFile(filepath.Join(bsub, "hello"))
		return err == nil && string(b) == "from-container\n", fmt.Sprintf("read: %q %v", b, err)
	})

	// A private source: the container is not created, with containerd's
	// reason, for HostToContainer and Bidirectional alike.
	for _, f := range []struct {
		name, prop, want string
	}{
		{"privhtc", "HostToContainer", fmt.Sprintf("path %q is mounted on %q but it is not a shared or slave mount", private, private)},
		{"privbidi", "Bidirectional", fmt.Sprintf("path %q is mounted on %q but it is not a shared mount", private, private)},
	} {
		d.writeManifest(f.name+".yaml", propagationPod(f.name, private, f.prop, true, "sleep 3600"))
		p := d.waitPod(f.name+"-"+node, 90*time.Second, "waiting in CreateContainerError", func(p *v1.Pod) bool {
			return waitingReason(p, "main") == "CreateContainerError"
		})
		if w := containerStatus(p, "main").State.Waiting; !strings.Contains(w.Message, f.want) {
			t.Errorf("%s: waiting message %q, want it to hold %q", f.name, w.Message, f.want)
		}
		d.poll(f.name+": Failed event with the reason", 20*time.Second, func() (bool, string) {
			n, msgs := d.eventCount(f.name+"-"+node, "Failed", f.want)
			return n > 0, strings.Join(msgs, "\n")
		})
	}

	// The pods go; what propagated goes with the test's mounts.
	for _, name := range []string{"htc", "bidi", "privhtc", "privbidi"} {
		d.removeManifest(name + ".yaml")
	}
	for _, name := range []string{"htc", "bidi", "privhtc", "privbidi"} {
		d.waitGone(name+"-"+node, 60*time.Second)
	}
	if err := unix.Unmount(sub, 0); err != nil {
		t.Errorf("unmount %s: %v", sub, err)
	}
}
