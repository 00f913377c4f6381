package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/testimage"
)

// TestImageGC: image garbage collection against real containerd. Images
// the test imports into podvisor's namespace itself (not from the images
// dir) are unpinned once no pod names them. podvisor restarted with
// --image-gc-high-threshold 0 and --image-gc-low-threshold 0 (any usage
// is "at or above" 0%, and "down to 0%" is never reached: every eligible
// image goes, the honest way to cross the threshold on the test's real
// filesystem) removes them at its first pass, the never-used one before
// the one a removed pod used; it keeps the images dir's images (busybox,
// and one no pod uses), another name of busybox's digest, the image of a
// running pod and the image of a manifest's init container (its container
// long removed). The
// log directory of a pod that no longer exists goes; a running pod's and
// a symlink stay.
func TestImageGC(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const (
		never = "podvisor.test/gc-never:1"
		used  = "podvisor.test/gc-used:1"
		init_ = "podvisor.test/gc-init:1"
		alias = "podvisor.test/gc-busybox-alias:1"
		arch  = "podvisor.test/gc-archive:1" // from the images dir, never used
	)
	t.Cleanup(func() {
		for _, ref := range []string{never, used, init_, alias, arch} {
			deleteImage(d, ref)
		}
	})
	// Distinct commands give distinct digests; never is the oldest.
	for _, ref := range []string{never, used, init_} {
		archive := filepath.Join(d.dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
		if err := testimage.Build(archive, testimage.Options{Ref: ref, Cmd: []string{"echo", ref}}); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(archive)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Import(ctx, f)
		f.Close()
		if err != nil {
			t.Fatalf("import %s: %v", ref, err)
		}
	}

	if err := testimage.Build(filepath.Join(d.images, "gc-archive.tar"), testimage.Options{Ref: arch, Cmd: []string{"echo", arch}}); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.waitLogLine("imported image archive", "busybox.tar")
	d.waitLogLine("imported image archive", "gc-archive.tar")
	img, err := cl.ImageService().Get(ctx, env.ImageRef)
	if err != nil {
		t.Fatal(err)
	}
	img.Name = alias
	if _, err := cl.ImageService().Create(ctx, img); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("user.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: user
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
`, used))
	d.writeManifest("keep.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: keep
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: init
    image: %s
    imagePullPolicy: Never
    command: ["true"]
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, init_))
	d.waitPod("user-"+node, 60*time.Second, "Running", running)
	keep := d.waitPod("keep-"+node, 60*time.Second, "Running", running)
	d.removeManifest("user.yaml")
	d.waitGone("user-"+node, 30*time.Second)
	d.stop(syscall.SIGTERM)

	// Log dirs: a pod's that no longer exists, a symlink to a directory
	// outside that looks like one.
	ghost := filepath.Join(d.logs, "default_ghost-"+node+"_0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(ghost, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ghost, "main", "0.log"), []byte("old\n"), 0o640)
	outside := filepath.Join(d.dir, "outside")
	os.MkdirAll(filepath.Join(outside, "main"), 0o755)
	os.WriteFile(filepath.Join(outside, "main", "0.log"), []byte("keep me\n"), 0o640)
	link := filepath.Join(d.logs, "default_link-"+node+"_fedcba9876543210")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	d.extraArgs = append(d.extraArgs, "--image-gc-high-threshold", "0", "--image-gc-low-threshold", "0", "--image-minimum-gc-age", "0s")
	d.start()
	names := func() []string {
		imgs, err := cl.ImageService().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range imgs {
			out = append(out, i.Name)
		}
		slices.Sort(out)
		return out
	}
	// A removal is logged once containerd has collected its content,
	// after the name is gone.
	removedAt := func() (iNever, iUsed int) {
		b, _ := os.ReadFile(d.logFile)
		iNever, iUsed = -1, -1
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, `msg="image garbage collected"`) {
				continue
			}
			switch {
			case strings.Contains(line, " image="+never+" "):
				iNever = i
			case strings.Contains(line, " image="+used+" "):
				iUsed = i
			}
		}
		return iNever, iUsed
	}
	d.poll("the unused images removed", 30*time.Second, func() (bool, string) {
		n := names()
		iNever, iUsed := removedAt()
		return !slices.Contains(n, never) && !slices.Contains(n, used) && iNever >= 0 && iUsed >= 0, fmt.Sprintf("images %q, logged at lines %d, %d", n, iNever, iUsed)
	})
	n := names()
	for _, want := range []string{env.ImageRef, alias, init_, arch} {
		if !slices.Contains(n, want) {
			t.Errorf("pinned image %s removed; left: %q", want, n)
		}
	}
	if iNever, iUsed := removedAt(); iNever > iUsed {
		t.Errorf("want %s (never used) removed before %s (used by a removed pod); log lines %d and %d", never, used, iNever, iUsed)
	}
	events, err := api.NewClient(d.sock).Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gced []string
	for _, e := range events.Items {
		if e.Reason == "ImageGarbageCollected" {
			gced = append(gced, e.Message)
		}
	}
	if len(gced) != 2 || !strings.Contains(strings.Join(gced, "\n"), never) || !strings.Contains(strings.Join(gced, "\n"), used) {
		t.Errorf("ImageGarbageCollected events: %q", gced)
	}
	// Pinned images still run: keep's container was not disturbed.
	if p := d.waitPod("keep-"+node, 10*time.Second, "Running", running); containerID(p, "main") != containerID(keep, "main") {
		t.Error("keep's container changed")
	}

	d.poll("the removed pod's log dir gone", 10*time.Second, func() (bool, string) {
		return !dirExists(ghost), "still there"
	})
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("symlink in the log dir removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "main", "0.log")); err != nil {
		t.Errorf("a symlink's target touched: %v", err)
	}
	keepLogs := filepath.Join(d.logs, fmt.Sprintf("default_keep-%s_%s", node, keep.UID))
	if !dirExists(keepLogs) {
		t.Errorf("a running pod's log dir %s removed", keepLogs)
	}
}
