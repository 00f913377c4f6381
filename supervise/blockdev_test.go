package supervise

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/manifest/podfile"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// A container's volumeDevices resolve, when it is created, to the block
// devices of its claims: symbolic links followed, anything but a block
// device refused naming the path, read-only for a readOnly claim.
func TestBlockDevices(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "disk")
	if err := unix.Mknod(dev, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))); err != nil {
		t.Skipf("cannot make a block device node (needs root): %v", err)
	}
	if err := os.Symlink(dev, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(dir, "tty"), unix.S_IFCHR|0o600, int(unix.Mkdev(5, 0))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctr := &v1.Container{Name: "app", VolumeDevices: []v1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}}
	for _, tc := range []struct {
		name string
		cd   claimDevice
		want []BlockDevice
		err  string
	}{
		{"device", claimDevice{Path: dev}, []BlockDevice{{HostPath: dev, ContainerPath: "/dev/xvda", Permissions: "mrw"}}, ""},
		{"readOnly", claimDevice{Path: dev, ReadOnly: true}, []BlockDevice{{HostPath: dev, ContainerPath: "/dev/xvda", Permissions: "r"}}, ""},
		{"link", claimDevice{Path: filepath.Join(dir, "link")}, []BlockDevice{{HostPath: dev, ContainerPath: "/dev/xvda", Permissions: "mrw"}}, ""},
		{"missing", claimDevice{Path: filepath.Join(dir, "none")}, nil, `volume "data": block device ` + filepath.Join(dir, "none") + " does not exist"},
		{"file", claimDevice{Path: filepath.Join(dir, "file")}, nil, `volume "data": ` + filepath.Join(dir, "file") + " is not a block device: it is a regular file"},
		{"character device", claimDevice{Path: filepath.Join(dir, "tty")}, nil, "is not a block device: it is a character device"},
		{"directory", claimDevice{Path: dir}, nil, "is not a block device: it is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &podWorker{claimDevices: map[string]claimDevice{"data": tc.cd}}
			got, err := w.blockDevices(ctr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	// A volume with no device (its claim not Block): kubelet's error.
	w := &podWorker{claimDevices: map[string]claimDevice{}}
	if _, err := w.blockDevices(ctr); err == nil || err.Error() != `cannot find volume "data" to pass into container "app"` {
		t.Errorf("a volume with no device: %v", err)
	}
}

// A claim whose volume mode does not fit its use keeps the pod waiting
// with kubelet's FailedMount message, and prepares nothing; a Block claim
// used as a device is kept for the containers, not prepared as a
// directory.
func TestClaimVolumeMode(t *testing.T) {
	pod := claimUser("p", "blk")
	pod.Spec.Containers = []v1.Container{{Name: "app", VolumeDevices: []v1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}}}
	pod.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = true
	p := newClaimPool(t.TempDir())
	fs := map[string]podfile.ClaimBinding{"default/blk": {Dir: "default_blk"}}
	w := &podWorker{d: &workerDeps{claims: p}, uid: "p", objs: Objects{Claims: fs}}
	want := "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: volume data has volumeMode Filesystem, but is specified in volumeDevices"
	if got := w.claimWait(pod); got != want {
		t.Errorf("claimWait = %q, want %q", got, want)
	}
	if err := w.prepareClaims(pod); err == nil || !strings.Contains(err.Error(), "volume data has volumeMode Filesystem, but is specified in volumeDevices") {
		t.Errorf("prepareClaims: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.root, "default_blk")); !os.IsNotExist(err) {
		t.Errorf("the mismatched claim's directory was provisioned: %v", err)
	}

	w.objs.Claims = map[string]podfile.ClaimBinding{"default/blk": {Volume: "disk", Path: "/dev/loop7", Block: true}}
	if got := w.claimWait(pod); got != "" {
		t.Errorf("claimWait of a Block claim used as a device = %q", got)
	}
	if err := w.prepareClaims(pod); err != nil {
		t.Fatalf("prepareClaims: %v", err)
	}
	if got := w.claimDevices["data"]; got != (claimDevice{Path: "/dev/loop7", ReadOnly: true}) || len(w.claimMounts) != 0 {
		t.Errorf("devices %+v, mounts %+v", w.claimDevices, w.claimMounts)
	}
}
