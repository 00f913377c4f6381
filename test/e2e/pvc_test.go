package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/loopfs"
	v1 "k8s.io/api/core/v1"
)

// claimDoc is a PersistentVolumeClaim document of storage request
// storage, with extra lines under metadata (annotations).
func claimDoc(name, mode, storage, meta string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
%sspec:
  accessModes: [%s]
  resources:
    requests:
      storage: %s
`, name, meta, mode, storage)
}

// claimPod is a pod whose container mounts claim at /data (readOnly on
// the volume source when ro) with fsGroup 2345, running script; rev
// changes the pod's content (a manifest edit).
func claimPod(name, claim string, ro bool, rev, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  annotations: {rev: %q}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {fsGroup: 2345}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: %s, readOnly: %t}
`, name, rev, script, claim, ro)
}

// quotaFS makes a loop-mounted ext4 with project quotas (mkfs -O
// quota,project, mounted prjquota) at a directory of its own, unmounted
// and detached when the test ends (after the daemon's own clean-up). A
// kernel without the quota format ext4 needs (CONFIG_QFMT_V2) cannot
// mount it: the file system is then a plain ext4, and quotas is false.
func quotaFS(t *testing.T) (mnt string, quotas bool) {
	t.Helper()
	loop, _ := loopfs.Device(t, 64<<20)
	loopfs.Mkfs(t, loop, "ext4", "-F", "-O", "quota,project")
	mnt, err := loopfs.Mount(t, loop, "ext4", "prjquota")
	if err == nil {
		return mnt, true
	}
	t.Logf("this kernel cannot mount ext4 with project quotas, the quota is checked to be reported as not enforced: %v", err)
	loopfs.Mkfs(t, loop, "ext4", "-F")
	if mnt, err = loopfs.Mount(t, loop, "ext4", ""); err != nil {
		t.Fatal(err)
	}
	return mnt, false
}

// TestPersistentVolumeClaims proves local claims end to end: a pod whose
// claim has no document waits with kubelet's FailedMount and starts when
// the claim appears; the provisioned directory has the pod's fsGroup,
// seen from inside; a write past the storage request fails with EDQUOT
// inside the container (a project quota on a loop-mounted ext4); the data
// outlives a manifest edit (a new pod) and a podvisor restart; readOnly
// is honoured; a second pod of a ReadWriteOncePod claim waits until the
// first is gone, across a podvisor restart; removing the pod keeps the data; removing a Delete claim
// removes its directory, a Retain one keeps it; validate names a bad
// claim's field and line.
func TestPersistentVolumeClaims(t *testing.T) {
	volumes, quotas := quotaFS(t)
	d := newDaemon(t, "--volumes-dir", volumes)
	d.start()

	// validate: a bad claim, by file, line and field.
	vdir := filepath.Join(d.dir, "validate")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(vdir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(claimDoc("bad", "ReadWriteSometimes", "1Gi", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := d.runCLI("", "validate", "--node-name", node, bad); code != 1 ||
		!strings.Contains(out+errOut, `bad.yaml:6: spec.accessModes: Unsupported value: "ReadWriteSometimes"`) {
		t.Errorf("validate a bad claim: exit %d:\n%s%s", code, out, errOut)
	}

	// A pod whose claim is not there waits, as kubelet's.
	const script = "[ -f /data/f ] || echo hello > /data/f; sleep 3600"
	d.writeManifest("app.yaml", claimPod("app", "data", false, "1", script))
	d.waitPod("app-"+node, 60*time.Second, "waiting in ContainerCreating", func(p *v1.Pod) bool {
		return waitingReason(p, "main") == "ContainerCreating"
	})
	want := `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC default/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found`
	d.poll("FailedMount for the missing claim", 20*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("app-"+node, "FailedMount", want)
		return n > 0, strings.Join(msgs, "\n")
	})
	d.hold("the pod waiting for its claim", 2*time.Second, func() (bool, string) {
		p, err := d.pod("app-" + node)
		return err == nil && !running(p), fmt.Sprint(err)
	})

	// The claim appears (8Mi, reclaim policy Delete): the pod starts.
	d.writeManifest("data.yaml", claimDoc("data", "ReadWriteOnce", "8Mi", "  annotations: {podvisor.io/reclaim-policy: Delete}\n"))
	d.waitPod("app-"+node, 90*time.Second, "running", running)
	dir := filepath.Join(volumes, "default_data")
	d.poll("the file written into the claim", 20*time.Second, func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(dir, "f"))
		return err == nil && string(b) == "hello\n", fmt.Sprintf("%q %v", b, err)
	})
	// fsGroup on the directory, from inside.
	out, errOut, code := d.runCLI("", "exec", "app-"+node, "--", "stat", "-c", "%g %A", "/data")
	if code != 0 || strings.TrimSpace(out) != "2345 drwxrwsrwx" {
		t.Errorf("stat /data inside: exit %d: %q %s; want \"2345 drwxrwsrwx\"", code, out, errOut)
	}
	if quotas {
		// The storage request is enforced: EDQUOT from inside.
		out, errOut, code = d.runCLI("", "exec", "app-"+node, "--", "sh", "-c", "dd if=/dev/zero of=/data/big bs=1M count=32 2>&1; echo rc=$?; rm -f /data/big")
		if code != 0 || !strings.Contains(out, "Disk quota exceeded") || strings.Contains(out, "rc=0") {
			t.Errorf("writing 32Mi into an 8Mi claim: exit %d: %s%s; want Disk quota exceeded", code, out, errOut)
		}
	} else {
		// Where the filesystem cannot, it is said.
		d.poll("VolumeQuotaNotEnforced warning", 20*time.Second, func() (bool, string) {
			n, msgs := d.eventCount("app-"+node, "VolumeQuotaNotEnforced", "The storage request of PersistentVolumeClaim default/data (8Mi) is not enforced on "+dir)
			return n > 0, strings.Join(msgs, "\n")
		})
	}

	// A manifest edit makes a new pod: the data is there.
	old := d.waitPod("app-"+node, 5*time.Second, "running", running).UID
	d.writeManifest("app.yaml", claimPod("app", "data", false, "2", script))
	d.waitPod("app-"+node, 90*time.Second, "the edited pod running", func(p *v1.Pod) bool { return p.UID != old && running(p) })
	// podvisor restarts: the data is still read from inside.
	d.stop(syscall.SIGTERM)
	d.start()
	d.poll("the file read inside the new pod after a restart", 30*time.Second, func() (bool, string) {
		out, errOut, code := d.runCLI("", "exec", "app-"+node, "--", "cat", "/data/f")
		return code == 0 && out == "hello\n", fmt.Sprintf("exit %d: %q %s", code, out, errOut)
	})

	// readOnly on the volume source.
	d.writeManifest("ro.yaml", claimPod("ro", "data", true, "1", "sleep 3600"))
	d.waitPod("ro-"+node, 90*time.Second, "running", running)
	out, errOut, code = d.runCLI("", "exec", "ro-"+node, "--", "sh", "-c", "cat /data/f; touch /data/x 2>&1; echo rc=$?")
	if code != 0 || !strings.HasPrefix(out, "hello\n") || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a readOnly claim: exit %d: %q %s", code, out, errOut)
	}

	// ReadWriteOncePod: the second pod waits until the first is gone.
	d.writeManifest("once.yaml", claimDoc("once", "ReadWriteOncePod", "4Mi", ""))
	d.writeManifest("first.yaml", claimPod("first", "once", false, "1", "sleep 3600"))
	d.waitPod("first-"+node, 90*time.Second, "running", running)
	d.writeManifest("second.yaml", claimPod("second", "once", false, "1", "sleep 3600"))
	d.poll("the second pod waiting for the ReadWriteOncePod claim", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("second-"+node, "FailedMount", "PersistentVolumeClaim default/once has access mode ReadWriteOncePod and is in use by pod default/first-"+node)
		return n > 0, strings.Join(msgs, "\n")
	})
	if p, err := d.pod("second-" + node); err != nil || running(p) {
		t.Errorf("the second pod of a ReadWriteOncePod claim runs beside the first (%v)", err)
	}
	// podvisor restarts: the first pod, found running, still holds the
	// claim, and the second keeps waiting. The events outlive the
	// restart: the second pod is refused again only if its count grows.
	const inUse = "PersistentVolumeClaim default/once has access mode ReadWriteOncePod and is in use by pod default/first-"
	before, _ := d.eventCount("second-"+node, "FailedMount", inUse+node)
	d.stop(syscall.SIGTERM)
	d.start()
	d.poll("the second pod refused the ReadWriteOncePod claim again after a restart", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("second-"+node, "FailedMount", inUse+node)
		return n > before, fmt.Sprintf("%d events before the restart: %s", before, strings.Join(msgs, "\n"))
	})
	d.hold("the second pod waiting after a restart", time.Second, func() (bool, string) {
		p, err := d.pod("second-" + node)
		return err == nil && !running(p), fmt.Sprint(err)
	})
	d.removeManifest("first.yaml")
	d.waitPod("second-"+node, 90*time.Second, "running once the first is gone", running)

	// A hostPath PersistentVolume document the claim names.
	host := d.hostDir("pv")
	d.writeManifest("pv.yaml", fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: host-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: %s, type: Directory}
---
%s`, host, claimDoc("onpv", "ReadWriteOnce", "1Gi", "")+"  volumeName: host-pv\n  storageClassName: \"\"\n"))
	d.writeManifest("onpv-pod.yaml", claimPod("onpv", "onpv", false, "1", "echo on-pv > /data/g; sleep 3600"))
	d.waitPod("onpv-"+node, 90*time.Second, "running", running)
	d.poll("the file written into the PersistentVolume's path", 20*time.Second, func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(host, "g"))
		return err == nil && string(b) == "on-pv\n", fmt.Sprintf("%q %v", b, err)
	})

	// podvisor get pvc shows the claims bound.
	out, errOut, code = d.runCLI("", "get", "pvc", "--no-headers")
	for _, want := range [][]string{{"data", "Bound", "default_data", "8Mi", "RWO"}, {"once", "Bound", "default_once", "4Mi", "RWOP"}, {"onpv", "Bound", "host-pv", "1Gi", "RWO"}} {
		if code != 0 || !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return slices.Equal(strings.Fields(l)[:min(5, len(strings.Fields(l)))], want) }) {
			t.Errorf("podvisor get pvc: exit %d, want a line with %q:\n%s%s", code, want, out, errOut)
		}
	}

	// Removing the pods keeps the data; removing a Delete claim removes
	// it, a Retain claim keeps it.
	for _, n := range []string{"app", "ro", "second", "onpv-pod"} {
		d.removeManifest(n + ".yaml")
	}
	for _, n := range []string{"app", "ro", "first", "second", "onpv"} {
		d.waitGone(n+"-"+node, 60*time.Second)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "hello\n" {
		t.Fatalf("the claim's data after its pods are gone: %q %v", b, err)
	}
	d.removeManifest("once.yaml")
	d.removeManifest("data.yaml")
	d.removeManifest("pv.yaml")
	d.poll("the Delete claim's directory removed", 30*time.Second, func() (bool, string) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if _, err := os.Stat(filepath.Join(volumes, "default_once")); err != nil {
		t.Errorf("the Retain claim's directory: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(host, "g")); err != nil || string(b) != "on-pv\n" {
		t.Errorf("the PersistentVolume's path after its claim is gone: %q %v", b, err)
	}
}
