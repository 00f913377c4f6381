package e2e

import (
	"context"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/api"
)

// TestImagesUnchangedAfterRestart: a restarted podvisor does not import
// again an archive unchanged since its import whose image containerd still
// holds, and its pods start from that image; once the image is gone from
// containerd, the next start imports the archive again.
func TestImagesUnchangedAfterRestart(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("one.yaml", sleeperManifest("one", 2, "sleep 3600"))
	d.waitPod("one-"+node, 60*time.Second, "Running", running)
	imports := func() int {
		b, _ := os.ReadFile(d.logFile)
		return strings.Count(string(b), `msg="imported image archive"`)
	}
	if n := imports(); n != 1 {
		t.Fatalf("first start: %d imports, want 1\n%s", n, d.logTail())
	}

	d.stop(syscall.SIGTERM)
	d.start()
	d.waitLogLine("image archive unchanged since its import", "busybox.tar")
	// A pod new since the restart starts from the image not imported again.
	d.writeManifest("two.yaml", sleeperManifest("two", 2, "sleep 3600"))
	d.waitPod("two-"+node, 60*time.Second, "Running", running)
	if n := imports(); n != 1 {
		t.Errorf("after a restart: %d imports, want still 1 (the archive is unchanged)", n)
	}

	// The image removed from containerd (the pods' containers keep their
	// snapshots): the next start imports the archive again.
	d.stop(syscall.SIGTERM)
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ImageService().Delete(context.Background(), env.ImageRef); err != nil {
		t.Fatalf("remove the image: %v", err)
	}
	d.start()
	d.poll("the archive imported again", 60*time.Second, func() (bool, string) {
		n := imports()
		return n == 2, "imports: " + strings.Repeat("I", n)
	})
	d.writeManifest("three.yaml", sleeperManifest("three", 2, "sleep 3600"))
	d.waitPod("three-"+node, 60*time.Second, "Running", running)
}

// TestImagesListed: once podvisor imported the test image archive, the
// client lists its image with the digest containerd holds, its config
// digest and size, and the pod that runs it.
func TestImagesListed(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("one.yaml", sleeperManifest("one", 2, "sleep 3600"))
	p := d.waitPod("one-"+node, 60*time.Second, "Running", running)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := api.NewClient(d.sock).Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	img, err := cl.GetImage(ctx, env.ImageRef)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	digest := img.Target().Digest.String()
	want := api.Image{Name: env.ImageRef, Digest: digest, ID: cfg.Digest.String(), Pods: []string{"default/one-" + node}}
	if len(list.Items) != 1 {
		t.Fatalf("Images = %+v, want just %s", list.Items, env.ImageRef)
	}
	got := list.Items[0]
	size := got.Size
	got.Size = 0
	if !reflect.DeepEqual(got, want) || size <= cfg.Size {
		t.Errorf("Images = %+v (size %d); want %+v with the size of its content", got, size, want)
	}
	if id := containerStatus(p, "main").ImageID; !strings.HasSuffix(id, "@"+digest) {
		t.Errorf("the pod's imageID %s is not the listed digest %s", id, digest)
	}
}
