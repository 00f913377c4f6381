package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/loopfs"
)

// btrfsFS makes a loop-mounted btrfs (quotas not enabled) at a directory
// of its own, unmounted and detached when the test ends (after the
// daemon's own clean-up); run runs a command with a bound, failing the
// test when it fails.
func btrfsFS(t *testing.T) (mnt string, run func(name string, args ...string) string) {
	t.Helper()
	mnt = loopfs.FS(t, "btrfs", 256<<20)
	return mnt, func(name string, args ...string) string {
		t.Helper()
		return loopfs.Run(t, name, args...)
	}
}

// TestClaimQuotaBtrfs proves a claim's storage request enforced on btrfs,
// where the volumes dir's filesystem has no project quotas: before the
// operator enabled quotas, the start log line and a claim's pod's
// VolumeQuotaNotEnforced warning name the command that enables them, and
// the claim's directory is a plain one (not a subvolume, which snapshots
// and one-device backups of the filesystem would leave out); once they
// are, a claim's directory is a subvolume limited to its request: inside
// the container a write under it succeeds and one past it fails with
// "Disk quota exceeded"; a subvolume made inside the claim, which the
// limit does not count, is named in the warning of the next pod that
// starts with the claim; removing the claim (reclaim policy Delete)
// deletes the subvolume, the one inside first.
func TestClaimQuotaBtrfs(t *testing.T) {
	volumes, run := btrfsFS(t)
	d := newDaemon(t, "--volumes-dir", volumes)
	d.start()

	// Quotas not enabled: said at start and in the pods' events, with the
	// fix.
	if b, err := os.ReadFile(d.logFile); err != nil || !strings.Contains(string(b), `volumeQuota="none: btrfs qgroup limits are not available: quotas are not enabled on the btrfs filesystem (btrfs quota enable `+volumes+`)"`) {
		t.Errorf("the start log line does not say the storage requests are not enforced, and why (%v):\n%s", err, d.logTail())
	}
	d.writeManifest("before.yaml", claimDoc("before", "ReadWriteOnce", "8Mi", "  annotations: {podvisor.io/reclaim-policy: Delete}\n"))
	d.writeManifest("before-pod.yaml", claimPod("before", "before", false, "1", "sleep 3600"))
	d.poll("VolumeQuotaNotEnforced naming btrfs quota enable", 60*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("before-"+node, "VolumeQuotaNotEnforced",
			"The storage request of PersistentVolumeClaim default/before (8Mi) is not enforced on "+filepath.Join(volumes, "default_before")+": ")
		ok := n > 0 && strings.Contains(strings.Join(msgs, "\n"), "(btrfs quota enable "+volumes+")")
		return ok, strings.Join(msgs, "\n")
	})
	d.removeManifest("before-pod.yaml")
	if ino := run("stat", "-c", "%i", filepath.Join(volumes, "default_before")); ino == "256" {
		t.Errorf("the claim made while quotas were not enabled is a subvolume (inode %s)", ino)
	}

	// The operator enables quotas: a claim made now is limited.
	run("btrfs", "quota", "enable", volumes)
	d.writeManifest("data.yaml", claimDoc("data", "ReadWriteOnce", "8Mi", "  annotations: {podvisor.io/reclaim-policy: Delete}\n"))
	d.writeManifest("app.yaml", claimPod("app", "data", false, "1", "sleep 3600"))
	d.waitPod("app-"+node, 90*time.Second, "running", running)
	out, errOut, code := d.runCLI("", "exec", "app-"+node, "--", "sh", "-c",
		"dd if=/dev/zero of=/data/small bs=1M count=4 2>&1; echo small=$?; dd if=/dev/zero of=/data/big bs=1M count=32 2>&1; echo big=$?; rm -f /data/big")
	if code != 0 || !strings.Contains(out, "small=0") || !strings.Contains(out, "Disk quota exceeded") || strings.Contains(out, "big=0") {
		t.Errorf("writing 4Mi, then 32Mi into an 8Mi claim: exit %d: %s%s; want the first written, the second refused with Disk quota exceeded", code, out, errOut)
	}
	if n, msgs := d.eventCount("app-"+node, "VolumeQuotaNotEnforced", ""); n > 0 {
		t.Errorf("VolumeQuotaNotEnforced for a claim enforced: %s", strings.Join(msgs, "\n"))
	}
	if list := run("btrfs", "subvolume", "list", "-o", volumes); !strings.Contains(list, "path default_data") {
		t.Errorf("default_data is not a subvolume:\n%s", list)
	}

	// A subvolume made inside the claim (as a container may, with the
	// ioctl any writer of the directory may call; busybox has no tool for
	// it): the next pod to start with the claim is warned.
	nested := filepath.Join(volumes, "default_data", "nested")
	run("btrfs", "subvolume", "create", nested)
	d.writeManifest("app2.yaml", claimPod("app2", "data", false, "1", "sleep 3600"))
	d.poll("VolumeQuotaNotEnforced naming the subvolume inside the claim", 60*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("app2-"+node, "VolumeQuotaNotEnforced",
			"The storage request of PersistentVolumeClaim default/data (8Mi) is not enforced on "+filepath.Join(volumes, "default_data")+": ")
		ok := n > 0 && strings.Contains(strings.Join(msgs, "\n"), "subvolume "+nested+" inside the claim is not counted against its limit")
		return ok, strings.Join(msgs, "\n")
	})

	// The claim and its pods removed: the subvolume is deleted.
	d.removeManifest("app2.yaml")
	d.removeManifest("app.yaml")
	d.removeManifest("data.yaml")
	d.poll("the claim's subvolume deleted", 60*time.Second, func() (bool, string) {
		_, err := os.Lstat(filepath.Join(volumes, "default_data"))
		list := run("btrfs", "subvolume", "list", "-o", volumes)
		return os.IsNotExist(err) && !strings.Contains(list, "default_data"), fmt.Sprintf("%v\n%s", err, list)
	})
}
