package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/pressure"
	"github.com/podvisor/podvisor/test/loopfs"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// loopFS mounts a new ext4 filesystem of mib MiB at dir, a directory of
// the daemon's: the daemon's cleanup unmounts it once podvisor has
// stopped; this cleanup, which runs before, makes sure the loop device is
// released (its unmount fails while podvisor still holds files there).
func loopFS(t *testing.T, dir string, mib int) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := loopfs.MountExt4(img, dir, mib); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loopfs.UnmountExt4(img, dir) })
}

// fillFS writes a file at path that leaves free% of its filesystem
// available (as statfs's f_bavail counts it).
func fillFS(t *testing.T, path string, free float64) {
	t.Helper()
	var s unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &s); err != nil {
		t.Fatal(err)
	}
	want := uint64(free * float64(s.Blocks))
	if s.Bavail <= want {
		t.Fatalf("the filesystem has %d of %d blocks available, less than %d already", s.Bavail, s.Blocks, want)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64((s.Bavail-want)*uint64(s.Bsize))); err != nil {
		t.Fatal(err)
	}
}

const pressureVictim = `apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "date +%s >> /starts/log; dd if=/dev/zero of=/data/f bs=1k count=512 2>/dev/null; dd if=/dev/zero of=/tmp/f bs=1k count=256 2>/dev/null; exec sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: starts, mountPath: /starts}
  volumes:
  - {name: data, emptyDir: {}}
  - {name: starts, hostPath: {path: STARTS}}
`

const pressureCritical = `apiVersion: v1
kind: Pod
metadata: {name: critical}
spec:
  priorityClassName: system-node-critical
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "dd if=/dev/zero of=/data/f bs=1k count=2048 2>/dev/null; exec sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - {name: data, emptyDir: {}}
`

// pressureLimited's emptyDir goes over its sizeLimit at once.
const pressureLimited = `apiVersion: v1
kind: Pod
metadata: {name: limited}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "dd if=/dev/zero of=/data/f bs=1k count=300 2>/dev/null; exec sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - {name: data, emptyDir: {sizeLimit: 100Ki}}
`

// pressureEphemeral's container writes past its ephemeral-storage limit
// in its writable layer.
const pressureEphemeral = `apiVersion: v1
kind: Pod
metadata: {name: ephemeral}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "dd if=/dev/zero of=/tmp/f bs=1k count=600 2>/dev/null; exec sleep 3600"]
    resources:
      limits: {ephemeral-storage: 200Ki}
`

// nodeCondition is the status of one of the local node's conditions.
func (d *daemon) nodeCondition(typ v1.NodeConditionType) (v1.ConditionStatus, *api.Node) {
	n, err := api.NewClient(d.sock).Node(context.Background())
	if err != nil {
		return "", nil
	}
	for _, c := range n.Conditions {
		if c.Type == typ {
			return c.Status, n
		}
	}
	return "", n
}

// TestDiskPressureEviction: on a small filesystem as --state-dir, a file
// that crosses nodefs.available makes DiskPressure True; the pod using
// most disk beyond its requests is evicted with kubelet's status and
// message, the system-node-critical pod never is though the pressure
// stays (and, whatever the thresholds, pods over an emptyDir sizeLimit or
// an ephemeral-storage limit are evicted with kubelet's messages); once the file is gone DiskPressure turns False after the
// transition period and the evicted static pod runs again (it logged a
// second start from inside its container).
func TestDiskPressureEviction(t *testing.T) {
	t.Parallel()
	d := newDaemon(t, "--eviction-hard", "nodefs.available<50%",
		"--eviction-pressure-transition-period", "3s", "--eviction-monitoring-interval", "1s")
	// nodefs is the state and log directories' filesystems, the fuller of
	// both: both on the small one.
	loopFS(t, d.state, 64)
	d.logs = filepath.Join(d.state, "logs")
	d.extraArgs = append(d.extraArgs, "--log-dir", d.logs)
	starts := d.hostDir("starts")
	d.writeManifest("victim.yaml", strings.ReplaceAll(pressureVictim, "STARTS", starts))
	d.writeManifest("critical.yaml", pressureCritical)
	d.writeManifest("limited.yaml", pressureLimited)
	d.writeManifest("ephemeral.yaml", pressureEphemeral)
	d.start()
	// A disk emptyDir over its sizeLimit: evicted with kubelet's message,
	// whatever the thresholds say.
	lp := d.waitPod("limited", 60*time.Second, "evicted for its emptyDir", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	if want := `Usage of EmptyDir volume "data" exceeds the limit "100Ki". `; lp.Status.Message != want {
		t.Errorf("limited pod's message %q, want %q", lp.Status.Message, want)
	}
	d.removeManifest("limited.yaml")
	ep := d.waitPod("ephemeral", 60*time.Second, "evicted for its writable layer", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	if want := `Container main exceeded its local ephemeral storage limit "200Ki". `; ep.Status.Message != want {
		t.Errorf("ephemeral pod's message %q, want %q", ep.Status.Message, want)
	}
	d.removeManifest("ephemeral.yaml")
	d.waitPod("victim", 60*time.Second, "running", running)
	d.waitPod("critical", 60*time.Second, "running", running)
	if st, n := d.nodeCondition(v1.NodeDiskPressure); st != v1.ConditionFalse {
		t.Fatalf("DiskPressure %q before the filesystem filled: %+v", st, n)
	}

	filler := filepath.Join(d.state, "filler")
	fillFS(t, filler, 0.3)
	p := d.waitPod("victim", 30*time.Second, "evicted", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	wantMsg := "The node was low on resource: ephemeral-storage. Threshold quantity: "
	if !strings.HasPrefix(p.Status.Message, wantMsg) || !strings.Contains(p.Status.Message, "Container main was using ") {
		t.Errorf("evicted pod's message %q, want kubelet's %q... naming the container", p.Status.Message, wantMsg)
	}
	if st, n := d.nodeCondition(v1.NodeDiskPressure); st != v1.ConditionTrue {
		t.Errorf("DiskPressure %q while the filesystem is full: %+v", st, n)
	}
	if n, msgs := d.eventCount("victim-"+node, "Evicted", wantMsg); n == 0 {
		t.Errorf("no Evicted event for the victim: %q", msgs)
	}
	d.poll("the pressure metrics", 10*time.Second, func() (bool, string) {
		m, err := api.NewClient(d.sock).Metrics(context.Background())
		return err == nil && strings.Contains(string(m), `podvisor_node_pressure{condition="DiskPressure"} 1`) &&
			strings.Contains(string(m), `podvisor_evictions_total{signal="nodefs.available"} 1`), fmt.Sprint(err, "\n", string(m))
	})
	out, _, err := d.cli("get", "node")
	if err != nil || !strings.Contains(out, "DiskPressure") {
		t.Errorf("podvisor get node: %v\n%s", err, out)
	}
	out, _, err = d.cli("describe", "node")
	if err != nil || !strings.Contains(out, "nodefs.available<50%") || !strings.Contains(out, "KubeletHasDiskPressure") {
		t.Errorf("podvisor describe node: %v\n%s", err, out)
	}
	// The pressure stays; the critical pod is the only one left to evict.
	d.hold("the system-node-critical pod running under pressure", 3*time.Second, func() (bool, string) {
		p, err := d.pod("critical")
		if err != nil {
			return false, err.Error()
		}
		return running(p) && p.Status.Phase == v1.PodRunning, fmt.Sprint(p.Status.Phase, " ", p.Status.Reason)
	})
	if n := len(fileLines(filepath.Join(starts, "log"))); n != 1 {
		t.Errorf("the victim started %d times under pressure, want 1", n)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d.poll("DiskPressure False", 20*time.Second, func() (bool, string) {
		st, _ := d.nodeCondition(v1.NodeDiskPressure)
		return st == v1.ConditionFalse, string(st)
	})
	d.waitPod("victim", 40*time.Second, "running again", running)
	d.poll("the victim's second start", 20*time.Second, func() (bool, string) {
		n := len(fileLines(filepath.Join(starts, "log")))
		return n >= 2, fmt.Sprint(n, " starts")
	})
}

const memoryHog = `apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while [ ! -e /trigger/go ]; do sleep 0.2; done; trap 'rm -f /mem/f; exit 0' TERM; dd if=/dev/zero of=/mem/f bs=1M count=1024 2>/dev/null; sleep 3600 & wait"]
    volumeMounts:
    - {name: mem, mountPath: /mem}
    - {name: trigger, mountPath: /trigger}
  volumes:
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 1200Mi}}
  - {name: trigger, hostPath: {path: TRIGGER}}
`

const memoryGuaranteed = `apiVersion: v1
kind: Pod
metadata: {name: guaranteed}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    resources:
      limits: {cpu: 100m, memory: 64Mi}
`

// TestMemoryPressureEviction: with memory.available's threshold just under
// what the host has available (measured as podvisor measures it), a
// BestEffort pod that fills 1 GiB of memory is evicted with kubelet's
// message while a Guaranteed pod keeps running.
func TestMemoryPressureEviction(t *testing.T) {
	obs, _ := pressure.Observer{}.Observe()
	avail := obs[pressure.MemoryAvailable].Available
	const margin = 384 << 20
	if avail < 2<<30 {
		t.Fatalf("the host has %d bytes of memory available; this test needs 2 GiB", avail)
	}
	d := newDaemon(t, "--eviction-hard", fmt.Sprintf("memory.available<%d", avail-margin),
		"--eviction-monitoring-interval", "1s", "--eviction-pressure-transition-period", "2s")
	trigger := d.hostDir("trigger")
	d.writeManifest("hog.yaml", strings.ReplaceAll(memoryHog, "TRIGGER", trigger))
	d.writeManifest("guaranteed.yaml", memoryGuaranteed)
	d.start()
	d.waitPod("hog", 60*time.Second, "running", running)
	d.waitPod("guaranteed", 60*time.Second, "running", running)
	if st, n := d.nodeCondition(v1.NodeMemoryPressure); st != v1.ConditionFalse {
		t.Fatalf("MemoryPressure %q before the hog allocated: %+v", st, n)
	}
	if err := os.WriteFile(filepath.Join(trigger, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := d.waitPod("hog", 60*time.Second, "evicted", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	if want := "The node was low on resource: memory. Threshold quantity: "; !strings.HasPrefix(p.Status.Message, want) ||
		!strings.Contains(p.Status.Message, "Container main was using ") {
		t.Errorf("hog's message %q, want kubelet's %q... naming the container", p.Status.Message, want)
	}
	g, err := d.pod("guaranteed")
	if err != nil || !running(g) || g.Status.Phase != v1.PodRunning {
		t.Fatalf("the Guaranteed pod is not running: %v %+v", err, g)
	}
	if cs := containerStatus(g, "main"); cs.RestartCount != 0 {
		t.Errorf("the Guaranteed pod restarted %d times", cs.RestartCount)
	}
}
