package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/supervise"
)

// TestLabelsThatBecomePaths: a container in podvisor's containerd
// namespace whose labels are crafted to climb out of podvisor's dirs (a
// pod UID and a sandbox ID of "../../…") is ignored by adoption, and
// nothing outside podvisor's dirs is removed: its sandbox directory and
// its pod directory would have been removed with the pod it was taken
// for.
func TestLabelsThatBecomePaths(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	// The sandbox dir is <run>/pods/ID and the pod dir <state>/pods/UID:
	// two levels up from each is the test's own directory.
	victims := map[string]string{"sandbox": filepath.Join(d.dir, "victim-sb"), "pod": filepath.Join(d.dir, "victim-uid")}
	for _, v := range victims {
		if err := os.MkdirAll(v, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v, "keep"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.NewContainer(ctx, "crafted", containerd.WithNewSpec(), containerd.WithContainerLabels(map[string]string{
		supervise.LabelPodUID: "../../victim-uid", supervise.LabelSandboxID: "../../victim-sb",
		supervise.LabelPodNamespace: "default", supervise.LabelPodName: "crafted", supervise.LabelContainer: "main",
	})); err != nil {
		t.Fatal(err)
	}
	// podvisor leaves it; the test removes it before the harness checks
	// that nothing is left.
	t.Cleanup(func() { cl.ContainerService().Delete(context.Background(), "crafted") })
	d.start()
	d.waitLogLine("ignoring a container whose labels cannot be podvisor's", "crafted")
	// A pod started after adoption shows the supervisor went on past it.
	d.writeManifest("after.yaml", `apiVersion: v1
kind: Pod
metadata: {name: after}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
	d.waitPod("after-"+node, 60*time.Second, "Running", running)
	for what, v := range victims {
		if _, err := os.Stat(filepath.Join(v, "keep")); err != nil {
			t.Errorf("the %s dir the crafted labels named, outside podvisor's dirs, was removed: %v", what, err)
		}
	}
	if _, err := d.pod("crafted"); err == nil {
		t.Error("a pod was made of the crafted container")
	}
}
