package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
)

func sleeperManifest(name string, grace int, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
`, name, grace, command)
}

// TestRemoveManifest: removing a manifest stops its pod within the grace
// period — at once for a process that exits on SIGTERM, after the grace
// period (SIGKILL) for one that ignores it — and releases everything,
// the pod IP included.
func TestRemoveManifest(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("polite.yaml", sleeperManifest("polite", 30, `trap "exit 0" TERM; sleep 3600 & wait`))
	d.writeManifest("stubborn.yaml", sleeperManifest("stubborn", 3, `trap "" TERM; while true; do sleep 1; done`))
	d.waitPod("polite-"+node, 60*time.Second, "Running", running)
	d.waitPod("stubborn-"+node, 60*time.Second, "Running", running)
	if n := len(d.newIPs()); n != 2 {
		t.Fatalf("%d IPs allocated for 2 pods", n)
	}

	t0 := time.Now()
	d.removeManifest("polite.yaml")
	d.removeManifest("stubborn.yaml")
	p := d.waitPod("stubborn-"+node, 10*time.Second, "Terminating", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 3 {
		t.Errorf("deletionGracePeriodSeconds = %v, want 3", p.DeletionGracePeriodSeconds)
	}
	// The polite pod goes long before its 30 s grace period ends.
	d.waitGone("polite-"+node, 20*time.Second)
	d.waitGone("stubborn-"+node, 30*time.Second)
	if el := time.Since(t0); el < 3*time.Second {
		t.Errorf("stubborn pod gone after %s, before its 3s grace period", el)
	}
	if ips := d.newIPs(); len(ips) != 0 {
		t.Errorf("IPs still allocated after the pods were removed: %v", ips)
	}
	if ids := d.containers(); len(ids) != 0 {
		t.Errorf("containers left: %v", ids)
	}
	if ms := mountsUnder(d.run); len(ms) != 0 {
		t.Errorf("mounts left under the run dir: %v", ms)
	}
	if entries, _ := os.ReadDir(filepath.Join(d.state, "pods")); len(entries) != 0 {
		t.Errorf("pod state left: %v", entries)
	}
}

// TestReboot simulates a host reboot: podvisor is stopped, every task is
// killed and deleted, the run dir is cleared. podvisor brings the pod back
// and no IP leaks.
func TestReboot(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("app.yaml", sleeperManifest("app", 1, "sleep 3600"))
	p := d.waitPod("app-"+node, 60*time.Second, "Running", running)
	oldIP := p.Status.PodIP

	d.stop(syscall.SIGTERM)
	ctx := context.Background()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctrs, _ := cl.Containers(ctx)
	for _, c := range ctrs {
		task, err := c.Task(ctx, nil)
		if err != nil {
			continue
		}
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range mountsUnder(d.run) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(d.run); err != nil {
		t.Fatal(err)
	}

	d.start()
	p = d.waitPod("app-"+node, 60*time.Second, "Running again", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 1
	})
	last := containerStatus(p, "main").LastTerminationState.Terminated
	if last == nil || last.Reason != "Unknown" {
		t.Errorf("lastState after reboot = %+v, want reason Unknown", last)
	}
	if ips := d.newIPs(); len(ips) != 1 || ips[0] != p.Status.PodIP {
		t.Errorf("allocated IPs %v, want only the pod's %s (was %s before)", ips, p.Status.PodIP, oldIP)
	}
}

// TestImageArchive: an image archive dropped into --images-dir is usable
// without any registry; a pod waiting for it starts once it is imported.
func TestImageArchive(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("other.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: other
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: podvisor.test/other:1
    command: ["sleep", "3600"]
`)
	d.waitPod("other-"+node, 30*time.Second, "waiting for its image", func(p *v1.Pod) bool {
		w := containerStatus(p, "main").State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff")
	})
	// A broken archive is reported and hurts nothing.
	if err := os.WriteFile(filepath.Join(d.images, "broken.tar"), []byte("not a tar archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitLogLine("broken.tar")
	// Written in place under another name, then renamed: never imported
	// half-written.
	tmp := filepath.Join(d.images, ".other.partial")
	if err := testimage.BuildDockerArchive(tmp, testimage.Options{Ref: "podvisor.test/other:1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.images, "other.tar")); err != nil {
		t.Fatal(err)
	}
	p := d.waitPod("other-"+node, 30*time.Second, "Running from the archive", running)
	if img := containerStatus(p, "main").Image; img != "podvisor.test/other:1" {
		t.Errorf("image = %q", img)
	}
}

// TestBadManifests: a manifest with an unsupported field is
// rejected with a clear reason, and an invalid manifest next to a running
// pod hurts nothing.
func TestBadManifests(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("good.yaml", sleeperManifest("good", 1, "sleep 3600"))
	p := d.waitPod("good-"+node, 60*time.Second, "Running", running)
	id := containerID(p, "main")

	d.writeManifest("shared.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: shared
spec:
  readinessGates: [{conditionType: example.com/ready}]
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
`)
	d.writeManifest("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: broken\nspec: [\n")
	d.waitLogLine("readinessGates: not supported by podvisor")
	d.waitLogLine("broken.yaml")
	if _, err := d.pod("shared-" + node); err == nil {
		t.Error("pod with readinessGates exists")
	}
	p = d.waitPod("good-"+node, 5*time.Second, "still Running", running)
	if got := containerID(p, "main"); got != id {
		t.Errorf("good pod's container changed: %s -> %s", id, got)
	}
	if rc := containerStatus(p, "main").RestartCount; rc != 0 {
		t.Errorf("good pod restarted %d times", rc)
	}
}

// TestSecondPodvisorRefused: the state dir lock refuses a second daemon.
func TestSecondPodvisorRefused(t *testing.T) {
	d := newDaemon(t)
	d.start()
	out, err := exec.Command(podvisorBin, d.args()...).CombinedOutput()
	if err == nil {
		t.Fatalf("second podvisor started:\n%s", out)
	}
	if !strings.Contains(string(out), "another podvisor") {
		t.Errorf("second podvisor said %q", out)
	}
}
