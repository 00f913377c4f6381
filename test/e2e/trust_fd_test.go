package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
)

// TestImagesArchiveThroughLinkRefused: an archive in the images directory
// that is a symlink to a file in a world-writable directory (sticky, as
// /tmp: whoever can write there can replace the file the link leads to)
// is not imported. An ImagesWarning event and the log name the directory,
// the link and why; a pod needing the image (imagePullPolicy Never) waits
// with ErrImageNeverPull, while the sound busybox.tar beside it is
// imported. Once the directory is fixed the archive is imported at the
// next retry and the pod runs on it.
func TestImagesArchiveThroughLinkRefused(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	ref := "podvisor.test/trustfd-" + randHex(4) + ":1"
	t.Cleanup(func() { deleteImage(d, ref) })
	shared := filepath.Join(d.dir, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(shared, "app.tar")
	if err := testimage.Build(target, testimage.Options{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(d.images, "app.tar")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("app.yaml", `apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+ref+`
    imagePullPolicy: Never
    command: ["sleep", "3600"]
`)
	d.start()

	why := shared + ": mode 0777 is group- or world-writable (holds the file " + link + " reached through a symlink)"
	d.poll("an ImagesWarning event naming the archive's directory and link", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(node, "ImagesWarning", "not imported: "+why)
		return n > 0, strings.Join(msgs, "\n")
	})
	d.waitLogLine("insecure images permissions", "not imported: ", shared, link)
	d.waitLogLine("imported image archive", "busybox.tar")
	d.waitPod("app", 30*time.Second, "waiting for its image with ErrImageNeverPull", func(p *v1.Pod) bool {
		return waitingReason(p, "main") == "ErrImageNeverPull"
	})
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.ImageService().Get(ctx, ref); !errdefs.IsNotFound(err) {
		t.Fatalf("image %s in containerd: %v, want not found", ref, err)
	}
	t.Logf("checked: %s refused, its image not imported", link)

	// Fixed: imported at the next retry (the back-off is at most 30 s).
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	d.poll("the fixed archive imported", 60*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(d.logFile)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `msg="imported image archive"`) && strings.Contains(line, "file="+link) && strings.Contains(line, ref) {
				return true, ""
			}
		}
		return false, "not imported yet"
	})
	d.waitPod("app", 60*time.Second, "running on the imported image", running)
}
