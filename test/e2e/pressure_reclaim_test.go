package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
)

// TestDiskPressureReclaimsFirst: issue 17's "Done when" for disk. With
// --embedded-containerd, containerd's root (the image filesystem) is
// <state-dir>/containerd, so state, logs and images share one small
// loop-mounted filesystem (nodefs is imagefs). Filling it crosses
// nodefs.available: the pressure manager first collects the image
// nobody uses and no archive brought (an 8 MiB one, imported straight
// into containerd: ImageGarbageCollected, asked by the pressure manager,
// logged before any eviction), never the images dir's archives nor the
// pods' images; freeing it is not enough, so the victim is then evicted
// with kubelet's status while the system-node-critical pod runs on; once
// the filler is gone the evicted static pod runs again.
func TestDiskPressureReclaimsFirst(t *testing.T) {
	t.Parallel()
	requireEnv(t)
	// The private containerd outlives podvisor: registered before the
	// daemon's cleanup so it runs after it (podvisor has removed the pods
	// through it), this stops it and removes its cgroup.
	var ctrdPID int
	var cgroup string
	t.Cleanup(func() {
		if ctrdPID != 0 {
			syscall.Kill(ctrdPID, syscall.SIGTERM)
			for deadline := time.Now().Add(10 * time.Second); processAlive(ctrdPID) && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
			}
		}
		if cgroup != "" {
			for _, dir := range cgroupfs.Dirs("/sys/fs/cgroup", cgroup) {
				cgroupfs.RemoveTree(dir)
			}
		}
	})
	d := newDaemon(t, "--embedded-containerd", "--containerd-binary", env.Containerd,
		"--eviction-hard", "nodefs.available<40%",
		"--eviction-monitoring-interval", "500ms", "--eviction-pressure-transition-period", "2s",
		"--image-minimum-gc-age", "0s")
	cgroup = d.ns + "-containerd"
	loopFS(t, d.state, 128)
	d.logs = filepath.Join(d.state, "logs")
	d.extraArgs = append(d.extraArgs, "--log-dir", d.logs)

	const (
		unused  = "podvisor.test/pressure-unused:1"
		archive = "podvisor.test/pressure-archive:1" // from the images dir, no pod uses it
		padMiB  = 8
	)
	// Random bytes: no layer compression makes the unused image smaller
	// than the space the test counts on it freeing.
	pad := filepath.Join(d.dir, "pad")
	buf := make([]byte, padMiB<<20)
	rand.Read(buf)
	if err := os.WriteFile(pad, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	unusedTar := filepath.Join(d.dir, "unused.tar")
	if err := testimage.Build(unusedTar, testimage.Options{Ref: unused, Cmd: []string{"echo", unused}, ExtraFiles: map[string]string{"/pad": pad}}); err != nil {
		t.Fatal(err)
	}
	if err := testimage.Build(filepath.Join(d.images, "archive.tar"), testimage.Options{Ref: archive, Cmd: []string{"echo", archive}}); err != nil {
		t.Fatal(err)
	}
	starts := d.hostDir("starts")
	d.writeManifest("victim.yaml", strings.ReplaceAll(pressureVictim, "STARTS", starts))
	d.writeManifest("critical.yaml", pressureCritical)
	d.start()
	b, err := os.ReadFile(filepath.Join(d.run, "containerd", "containerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	if ctrdPID, _ = strconv.Atoi(strings.TrimSpace(string(b))); ctrdPID == 0 {
		t.Fatalf("embedded containerd pid file %q", b)
	}
	d.waitLogLine("imported image archive", "busybox.tar")
	d.waitLogLine("imported image archive", "archive.tar")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := containerd.New(filepath.Join(d.run, "containerd", "containerd.sock"), containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	f, err := os.Open(unusedTar)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Import(ctx, f)
	f.Close()
	if err != nil {
		t.Fatalf("import %s into the embedded containerd: %v", unused, err)
	}
	names := func() []string {
		imgs, err := cl.ImageService().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range imgs {
			out = append(out, i.Name)
		}
		return out
	}
	if n := names(); !slices.Contains(n, unused) {
		t.Fatalf("%s not in the embedded containerd after its import: %q", unused, n)
	}

	d.waitPod("victim", 60*time.Second, "running", running)
	d.waitPod("critical", 60*time.Second, "running", running)
	if st, n := d.nodeCondition(v1.NodeDiskPressure); st != v1.ConditionFalse {
		t.Fatalf("DiskPressure %q before the filesystem filled: %+v", st, n)
	}

	// 25% left: below the 40% threshold even once the unused image's
	// 8 MiB (6% of 128 MiB) are back.
	filler := filepath.Join(d.state, "filler")
	fillFS(t, filler, 0.25)
	p := d.waitPod("victim", 30*time.Second, "evicted", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	wantMsg := "The node was low on resource: ephemeral-storage. Threshold quantity: "
	if !strings.HasPrefix(p.Status.Message, wantMsg) || !strings.Contains(p.Status.Message, "Container main was using ") {
		t.Errorf("evicted pod's message %q, want kubelet's %q... naming the container", p.Status.Message, wantMsg)
	}
	if n, msgs := d.eventCount("victim-"+node, "Evicted", wantMsg); n == 0 {
		t.Errorf("no Evicted event for the victim: %q", msgs)
	}

	// The unused image went first, for the pressure manager, and only it.
	gcLine, evictLine := -1, -1
	logText, _ := os.ReadFile(d.logFile)
	for i, line := range strings.Split(string(logText), "\n") {
		switch {
		case gcLine < 0 && strings.Contains(line, `msg="image garbage collected"`) && strings.Contains(line, " image="+unused+" "):
			gcLine = i
		case evictLine < 0 && strings.Contains(line, `msg="node pressure: evicting pod"`):
			evictLine = i
		}
	}
	if gcLine < 0 || evictLine < 0 || gcLine > evictLine {
		t.Errorf("want %s collected before the first eviction; logged at lines %d and %d", unused, gcLine, evictLine)
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
	if len(gced) != 1 || !strings.Contains(gced[0], unused) || !strings.Contains(gced[0], "the node-pressure manager asked for space") {
		t.Errorf("ImageGarbageCollected events %q, want one for %s asked by the node-pressure manager", gced, unused)
	}
	n := names()
	if slices.Contains(n, unused) {
		t.Errorf("unused image %s still there: %q", unused, n)
	}
	for _, want := range []string{env.ImageRef, archive} {
		if !slices.Contains(n, want) {
			t.Errorf("pinned image %s removed; left: %q", want, n)
		}
	}
	if st, n := d.nodeCondition(v1.NodeDiskPressure); st != v1.ConditionTrue {
		t.Errorf("DiskPressure %q while the filesystem is full: %+v", st, n)
	}
	c, err := d.pod("critical")
	if err != nil || !running(c) {
		t.Fatalf("the system-node-critical pod is not running under pressure: %v %+v", err, c)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d.waitPod("victim", 30*time.Second, "running again", running)
	d.poll("the victim's second start", 10*time.Second, func() (bool, string) {
		n := len(fileLines(filepath.Join(starts, "log")))
		return n >= 2, fmt.Sprint(n, " starts")
	})
	if n := names(); !slices.Contains(n, env.ImageRef) || !slices.Contains(n, archive) {
		t.Errorf("pinned images removed; left: %q", n)
	}
}
