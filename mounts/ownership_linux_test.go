package mounts

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func gidMode(t *testing.T, p string) (uint32, fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Gid, fi.Mode()
}

func TestSetOwnershipWalk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.MkdirAll(filepath.Join(root, "d"), 0o700)
	os.WriteFile(filepath.Join(root, "d/f"), nil, 0o600)
	os.WriteFile(filepath.Join(root, "ro"), nil, 0o400)
	os.Symlink("d/f", filepath.Join(root, "link"))
	g := int64(2345)

	if err := setOwnership(root, &g, nil, false); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{
		".":   fs.ModeDir | fs.ModeSetgid | 0o775,
		"d":   fs.ModeDir | fs.ModeSetgid | 0o770,
		"d/f": 0o660,
		"ro":  0o660,
	} {
		gid, mode := gidMode(t, filepath.Join(root, path))
		if gid != 2345 || mode != want {
			t.Errorf("%s: gid %d mode %v, want 2345 %v", path, gid, mode, want)
		}
	}
	if gid, mode := gidMode(t, filepath.Join(root, "link")); gid != 2345 || mode&fs.ModeSymlink == 0 {
		t.Errorf("link: gid %d mode %v", gid, mode)
	}

	// Read-only (a content volume): group read, not write.
	root2 := t.TempDir()
	os.WriteFile(filepath.Join(root2, "s"), nil, 0o400)
	if err := setOwnership(root2, &g, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, mode := gidMode(t, filepath.Join(root2, "s")); mode != 0o440 {
		t.Errorf("read-only file mode %v, want 0440", mode)
	}

	// OnRootMismatch: a root that already matches is not walked.
	os.WriteFile(filepath.Join(root, "later"), nil, 0o600)
	os.Chown(filepath.Join(root, "later"), 0, 0)
	policy := v1.FSGroupChangeOnRootMismatch
	if err := setOwnership(root, &g, &policy, false); err != nil {
		t.Fatal(err)
	}
	if gid, _ := gidMode(t, filepath.Join(root, "later")); gid != 0 {
		t.Errorf("OnRootMismatch walked a matching root (later has gid %d)", gid)
	}
	always := v1.FSGroupChangeAlways
	if err := setOwnership(root, &g, &always, false); err != nil {
		t.Fatal(err)
	}
	if gid, _ := gidMode(t, filepath.Join(root, "later")); gid != 2345 {
		t.Errorf("Always did not walk (later has gid %d)", gid)
	}
	// A root with another group is walked under OnRootMismatch.
	g2 := int64(3456)
	if err := setOwnership(root, &g2, &policy, false); err != nil {
		t.Fatal(err)
	}
	if gid, _ := gidMode(t, filepath.Join(root, "later")); gid != 3456 {
		t.Errorf("OnRootMismatch did not walk a mismatching root (later has gid %d)", gid)
	}
	if err := setOwnership(root, nil, nil, false); err != nil {
		t.Errorf("no fsGroup: %v", err)
	}
}

// A secret volume is a tmpfs, its files go there and nowhere else, and the
// pod's fsGroup makes them readable by the group.
func TestWriteVolumeSecretOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	g := int64(2000)
	mode := int32(0o400)
	p := testPod(t, v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{FSGroup: &g},
		Volumes: []v1.Volume{
			{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x", DefaultMode: &mode}}},
			{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		},
	})
	t.Cleanup(func() { Cleanup(p.Dir) })
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	sec, cm := &p.Spec.Spec.Volumes[0], &p.Spec.Spec.Volumes[1]
	path := contentPath(p.Dir, sec)
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil || st.Type != 0x01021994 { // TMPFS_MAGIC
		t.Fatalf("secret volume is not a tmpfs: type %#x, err %v", st.Type, err)
	}
	if HasFiles(p.Dir, sec) {
		t.Error("HasFiles before any write")
	}
	changed, err := WriteVolume(p, sec, Files{"pw": {Data: []byte("s3cret"), Mode: mode}})
	if err != nil || !changed {
		t.Fatalf("write: %v %v", changed, err)
	}
	if !HasFiles(p.Dir, sec) {
		t.Error("HasFiles after a write")
	}
	gid, m := gidMode(t, filepath.Join(path, "..data", "pw"))
	if gid != 2000 || m != 0o440 {
		t.Errorf("secret file gid %d mode %v, want 2000 0440", gid, m)
	}
	if _, err := WriteVolume(p, cm, Files{"k": {Data: []byte("v"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if gid, m := gidMode(t, contentPath(p.Dir, cm)); gid != 2000 || m&fs.ModeSetgid == 0 {
		t.Errorf("configMap root gid %d mode %v, want 2000 and setgid", gid, m)
	}
	// Setup again (a podvisor restart) keeps the files, the one tmpfs and
	// the root's ownership.
	before, _ := Under(p.Dir)
	if err := Setup(p); err != nil {
		t.Fatal(err)
	}
	if after, _ := Under(p.Dir); len(after) != len(before) {
		t.Errorf("mounts %v after Setup again, %v before", after, before)
	}
	if gid, m := gidMode(t, contentPath(p.Dir, cm)); gid != 2000 || m&fs.ModeSetgid == 0 {
		t.Errorf("after Setup again: configMap root gid %d mode %v, want 2000 and setgid", gid, m)
	}
	if !HasFiles(p.Dir, sec) || !HasFiles(p.Dir, cm) {
		t.Error("Setup again lost the volumes' files")
	}

	// Without its tmpfs a secret volume is never written.
	unmounted := Pod{Spec: p.Spec, Dir: t.TempDir()}
	os.MkdirAll(contentPath(unmounted.Dir, sec), 0o777)
	if _, err := WriteVolume(unmounted, sec, Files{"pw": {Data: []byte("s3cret"), Mode: mode}}); err == nil || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("write without a tmpfs: %v", err)
	}
	if HasFiles(unmounted.Dir, sec) {
		t.Error("a secret was written to disk")
	}

	// Cleanup unmounts the tmpfs and removes everything.
	if err := Cleanup(p.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Dir); err == nil {
		t.Error("pod dir still there after Cleanup")
	}
}
