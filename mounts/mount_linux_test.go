package mounts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMemoryEmptyDir(t *testing.T) {
	requireRoot(t)
	limit := resource.MustParse("1Mi")
	p := testPod(t, v1.PodSpec{Volumes: []v1.Volume{
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}},
	}})
	t.Cleanup(func() { _ = Cleanup(p.Dir) })
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(p.Dir, "volumes", "empty-dir", "cache")
	var st unix.Statfs_t
	if err := unix.Statfs(vol, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		t.Fatalf("emptyDir filesystem = %#x, want tmpfs", st.Type)
	}
	if size := int64(st.Blocks) * st.Bsize; size != limit.Value() {
		t.Errorf("tmpfs size = %d, want %d", size, limit.Value())
	}
	if err := os.WriteFile(filepath.Join(vol, "keep"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(vol, "keep")); got != "data" {
		t.Errorf("tmpfs content after second Setup = %q, want \"data\"", got)
	}
	if n := countMounts(t, vol); n != 1 {
		t.Errorf("%d mounts at the emptyDir after two Setups, want 1", n)
	}

	if err := Cleanup(p.Dir); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if n := countMounts(t, vol); n != 0 {
		t.Errorf("%d mounts left after Cleanup", n)
	}
	if _, err := os.Stat(p.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod dir still there after Cleanup: %v", err)
	}
	if err := Cleanup(p.Dir); err != nil {
		t.Errorf("Cleanup of a missing dir: %v", err)
	}
}

func TestCleanupDoesNotDeleteThroughMounts(t *testing.T) {
	requireRoot(t)
	p := testPod(t, v1.PodSpec{})
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	// Something (a crashed run, an admin) left a bind mount of host data
	// inside the pod dir; Cleanup must unmount it, not delete the data.
	hostData := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostData, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(p.Dir, "stray")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(hostData, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })

	if err := Cleanup(p.Dir); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hostData, "precious")); err != nil {
		t.Fatalf("host data behind a mount was deleted: %v", err)
	}
	if _, err := os.Stat(p.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod dir still there: %v", err)
	}
}

func countMounts(t *testing.T, path string) int {
	t.Helper()
	mps, err := mountPoints()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mp := range mps {
		if mp == path {
			n++
		}
	}
	return n
}
