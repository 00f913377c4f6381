package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/loopfs"
	v1 "k8s.io/api/core/v1"
)

// blockVolumeDoc is a PersistentVolume of volumeMode Block (source: its
// local or hostPath lines) and a claim of that mode bound to it by name.
func blockVolumeDoc(name, source string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s}
spec:
  volumeMode: Block
  capacity: {storage: 16Mi}
  accessModes: [ReadWriteOnce]
%[2]s---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[1]s}
spec:
  volumeMode: Block
  volumeName: %[1]s
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 8Mi}}
`, name, source)
}

// devicePod is a pod whose container gets claim as a device at
// devicePath (readOnly on the volume source when ro) and sleeps.
func devicePod(name, claim, devicePath string, ro bool) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    volumeDevices: [{name: data, devicePath: %s}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: %s, readOnly: %t}
`, name, devicePath, claim, ro)
}

// TestBlockVolumes proves raw block volumes end to end: a local
// PersistentVolume of volumeMode Block names a loop device; a pod gets it
// at /dev/xvda through volumeDevices and writes a marker with dd that the
// host reads in the device's backing file; a readOnly claim reads it and
// cannot write; a device missing when the container is created keeps it
// in CreateContainerError naming the path, and it starts once the device
// is there; a Filesystem claim in volumeDevices keeps its pod waiting
// with kubelet's FailedMount; a Block claim with no volume stays Pending;
// validate names a bad devicePath's file, line and field.
func TestBlockVolumes(t *testing.T) {
	dev, backing := loopfs.Device(t, 16<<20) // detached after the daemon's clean-up, registered later
	d := newDaemon(t)
	d.start()

	// validate: a relative devicePath, by file, line and field.
	vdir := filepath.Join(d.dir, "validate")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(vdir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(devicePod("bad", "disk", "xvda", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := d.runCLI("", "validate", "--node-name", node, bad); code != 1 ||
		!strings.Contains(out+errOut, `bad.yaml:11: spec.containers[0].volumeDevices[0].devicePath: must be an absolute path, got "xvda"`) {
		t.Errorf("validate a relative devicePath: exit %d:\n%s%s", code, out, errOut)
	}

	// The volumes: the loop device as a local volume; a hostPath one
	// whose device is not there yet; a Block claim with no volume; a
	// Filesystem claim (a provisioned directory).
	late := filepath.Join(d.hostDir("late"), "disk")
	affinity := fmt.Sprintf("  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [%s]}]}]}}\n", node)
	d.writeManifest("volumes.yaml", blockVolumeDoc("disk", "  local: {path: "+dev+"}\n"+affinity)+"---\n"+
		blockVolumeDoc("late", "  hostPath: {path: "+late+"}\n")+"---\n"+
		claimDoc("nopv", "ReadWriteOnce", "8Mi", "")+"  volumeMode: Block\n---\n"+
		claimDoc("fs", "ReadWriteOnce", "8Mi", ""))
	d.writeManifest("rw.yaml", devicePod("rw", "disk", "/dev/xvda", false))
	d.writeManifest("ro.yaml", devicePod("ro", "disk", "/dev/xvda", true))
	d.writeManifest("late.yaml", devicePod("late", "late", "/dev/xvdb", false))
	d.writeManifest("mismatch.yaml", devicePod("mismatch", "fs", "/dev/xvda", false))

	// Written from inside at 1 MiB, read back inside and in the backing
	// file on the host.
	const marker = "podvisor-block-marker"
	d.waitPod("rw-"+node, 90*time.Second, "running", running)
	out, errOut, code := d.runCLI("", "exec", "rw-"+node, "--", "sh", "-c",
		"test -b /dev/xvda && printf "+marker+" | dd of=/dev/xvda bs=512 seek=2048 conv=notrunc,fsync 2>/dev/null && dd if=/dev/xvda bs=512 skip=2048 count=1 2>/dev/null | head -c 21")
	if code != 0 || out != marker {
		t.Errorf("write and read the marker inside: exit %d: %q %s", code, out, errOut)
	}
	d.poll("the marker in the loop device's backing file", 20*time.Second, func() (bool, string) {
		f, err := os.Open(backing)
		if err != nil {
			return false, err.Error()
		}
		defer f.Close()
		b := make([]byte, len(marker))
		_, err = f.ReadAt(b, 1<<20)
		return string(b) == marker, fmt.Sprintf("%q %v", b, err)
	})

	// readOnly: the marker reads, a write is refused.
	d.waitPod("ro-"+node, 90*time.Second, "running", running)
	out, errOut, code = d.runCLI("", "exec", "ro-"+node, "--", "sh", "-c",
		"dd if=/dev/xvda bs=512 skip=2048 count=1 2>/dev/null | head -c 21; echo; echo x | dd of=/dev/xvda bs=512 seek=4096 conv=notrunc 2>&1; echo rc=$?")
	if code != 0 || !strings.HasPrefix(out, marker+"\n") || !strings.Contains(out, "Operation not permitted") || strings.Contains(out, "rc=0") {
		t.Errorf("a readOnly block claim: exit %d: %q %s; want the marker, then a write refused", code, out, errOut)
	}

	// A device missing at creation: CreateContainerError naming it, then
	// the container starts once it is there (a link to the loop device).
	d.waitPod("late-"+node, 60*time.Second, "waiting in CreateContainerError naming "+late, func(p *v1.Pod) bool {
		w := containerStatus(p, "main").State.Waiting
		return w != nil && w.Reason == "CreateContainerError" && strings.Contains(w.Message, "block device "+late+" does not exist")
	})
	if err := os.Symlink(dev, late); err != nil {
		t.Fatal(err)
	}
	d.waitPod("late-"+node, 60*time.Second, "running once the device is there", running)
	out, errOut, code = d.runCLI("", "exec", "late-"+node, "--", "sh", "-c", "dd if=/dev/xvdb bs=512 skip=2048 count=1 2>/dev/null | head -c 21")
	if code != 0 || out != marker {
		t.Errorf("read the marker through the late device: exit %d: %q %s", code, out, errOut)
	}

	// A Filesystem claim in volumeDevices: kubelet's FailedMount.
	d.poll("FailedMount for a Filesystem claim in volumeDevices", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("mismatch-"+node, "FailedMount", "failed to process volumes=[data]: volume data has volumeMode Filesystem, but is specified in volumeDevices")
		return n > 0, strings.Join(msgs, "\n")
	})
	if p, err := d.pod("mismatch-" + node); err != nil || running(p) {
		t.Errorf("the pod with a Filesystem claim in volumeDevices runs (%v)", err)
	}

	// podvisor get pvc -o wide: the Block claims, bound or Pending.
	out, errOut, code = d.runCLI("", "get", "pvc", "-o", "wide", "--no-headers")
	for _, want := range [][]string{{"disk", "Bound", "disk", "8Mi", "RWO"}, {"nopv", "Pending"}} {
		if code != 0 || !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 0 && slices.Equal(f[:min(len(want), len(f))], want) && slices.Contains(f, "Block")
		}) {
			t.Errorf("podvisor get pvc -o wide: exit %d, want a line with %q and Block:\n%s%s", code, want, out, errOut)
		}
	}
}
