package mounts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// hostFiles makes, outside any volume, what a container would aim its
// symlinks at: a 0600 file and a directory holding a 0600 file and a 0700
// directory, all root:root. It returns the file, the directory, a check
// that none of them changed (failing the test) and a report of whether
// any did.
func hostFiles(t *testing.T) (file, dir string, unchanged func(), changed func() bool) {
	t.Helper()
	host := t.TempDir()
	file = filepath.Join(host, "secret")
	dir = filepath.Join(host, "tree")
	mustDo(t, os.WriteFile(file, []byte("x"), 0o600))
	mustDo(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o700))
	mustDo(t, os.Chmod(dir, 0o700))
	mustDo(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600))
	want := map[string]fs.FileMode{
		file:                           0o600,
		dir:                            fs.ModeDir | 0o700,
		filepath.Join(dir, "sub"):      fs.ModeDir | 0o700,
		filepath.Join(dir, "sub", "f"): 0o600,
	}
	for p := range want {
		mustDo(t, os.Chown(p, 0, 0))
	}
	check := func(report func(format string, args ...any)) {
		for p, mode := range want {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode() != mode || st.Uid != 0 || st.Gid != 0 {
				report("host %s changed: %v %d:%d, want %v 0:0", p, fi.Mode(), st.Uid, st.Gid, mode)
			}
		}
	}
	unchanged = func() {
		t.Helper()
		check(t.Errorf)
	}
	changed = func() bool {
		did := false
		check(func(string, ...any) { did = true })
		return did
	}
	return file, dir, unchanged, changed
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// bothOpens runs f twice: with openat2, and as on a kernel without it
// (the O_NOFOLLOW walk).
func bothOpens(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", f)
	t.Run("no-openat2", func(t *testing.T) {
		withoutOpenat2(t)
		f(t)
	})
}

// The walk changes symlinks themselves and never what they point at,
// inside or outside the volume.
func TestSetOwnershipNeverFollowsSymlinks(t *testing.T) {
	requireRoot(t)
	bothOpens(t, func(t *testing.T) {
		file, dir, unchanged, _ := hostFiles(t)
		root := t.TempDir()
		mustDo(t, os.Mkdir(filepath.Join(root, "d"), 0o700))
		mustDo(t, os.WriteFile(filepath.Join(root, "d", "in"), nil, 0o600))
		mustDo(t, os.Symlink(file, filepath.Join(root, "file-link")))
		mustDo(t, os.Symlink(dir, filepath.Join(root, "d", "dir-link")))
		mustDo(t, os.Symlink("../../"+filepath.Base(filepath.Dir(file)), filepath.Join(root, "up")))
		// A content volume's own symlinks, ..data and a name through it.
		mustDo(t, os.Symlink("d", filepath.Join(root, "..data")))
		mustDo(t, os.Symlink("..data/in", filepath.Join(root, "in")))
		mustDo(t, os.Chmod(filepath.Join(root, "d", "in"), 0o400))
		g := int64(2345)
		for _, readOnly := range []bool{true, false} {
			if err := setOwnership(root, &g, nil, readOnly); err != nil {
				t.Fatal(err)
			}
		}
		unchanged()
		for _, l := range []string{"file-link", "d/dir-link", "up", "..data", "in"} {
			if gid, mode := gidMode(t, filepath.Join(root, l)); gid != 2345 || mode&fs.ModeSymlink == 0 {
				t.Errorf("%s: gid %d mode %v, want the link itself in group 2345", l, gid, mode)
			}
		}
		if gid, mode := gidMode(t, filepath.Join(root, "d", "in")); gid != 2345 || mode != 0o660 {
			t.Errorf("d/in: gid %d mode %v, want 2345 0660", gid, mode)
		}
	})
}

// A container that swaps, as fast as it can, a file and a directory of its
// own for symlinks to host paths never gets the walk to change the host
// paths. The names swapped come last in the listing, behind many files,
// so the walk's window between listing and opening them is wide.
func TestSetOwnershipRacingSwaps(t *testing.T) {
	requireRoot(t)
	bothOpens(t, func(t *testing.T) {
		file, dir, unchanged, changed := hostFiles(t)
		root := t.TempDir()
		for i := range 100 {
			mustDo(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("a%03d", i)), nil, 0o600))
		}
		// zf and zd are a file and a directory; .zf and .zd symlinks to the
		// host; the racer exchanges each pair atomically (RENAME_EXCHANGE),
		// so every name always exists, as either.
		mustDo(t, os.WriteFile(filepath.Join(root, "zf"), nil, 0o777))
		mustDo(t, os.Chmod(filepath.Join(root, "zf"), 0o777))
		mustDo(t, os.Mkdir(filepath.Join(root, "zd"), 0o700))
		mustDo(t, os.Symlink(file, filepath.Join(root, ".zf")))
		mustDo(t, os.Symlink(dir, filepath.Join(root, ".zd")))
		rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
		mustDo(t, err)
		defer unix.Close(rootFD)

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var swaps [2]int
		for i, pair := range [][2]string{{"zf", ".zf"}, {"zd", ".zd"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := unix.Renameat2(rootFD, pair[0], rootFD, pair[1], unix.RENAME_EXCHANGE); err != nil {
						t.Errorf("exchange %s: %v", pair, err)
						return
					}
					swaps[i]++
				}
			}()
		}
		g := int64(2345)
		var walkErr error
		walks := 0
		for ; walks < 100 && walkErr == nil && !changed(); walks++ {
			walkErr = setOwnership(root, &g, nil, walks%2 == 0)
		}
		close(stop)
		wg.Wait()
		if walkErr != nil {
			t.Errorf("walk: %v", walkErr)
		}
		if swaps[0] == 0 || swaps[1] == 0 {
			t.Fatalf("the racer did not swap (%v)", swaps)
		}
		t.Logf("%d walks, %v swaps", walks, swaps)
		unchanged()
	})
}

// An emptyDir with a fsGroup: its root alone is given to the group, once,
// when new; the ready marker lies beside the volume, not in it; Setup run
// again (a podvisor restart) changes nothing in or of the volume, even what
// a container changed or aimed at the host; a volume whose marker is gone
// has its root set again, and only its root; a medium Memory volume whose
// tmpfs is gone is mounted and set again.
func TestEmptyDirFSGroupRootOnly(t *testing.T) {
	requireRoot(t)
	g := int64(2345)
	policy := v1.FSGroupChangeOnRootMismatch
	p := testPod(t, v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{FSGroup: &g, FSGroupChangePolicy: &policy},
		Volumes: []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		},
	})
	t.Cleanup(func() { Cleanup(p.Dir) })
	mustDo(t, Setup(p))
	file, dir, unchanged, _ := hostFiles(t)
	const root = fs.ModeDir | fs.ModeSetgid | 0o777
	for _, name := range []string{"data", "mem"} {
		vol := emptyDirPath(p.Dir, name)
		if gid, mode := gidMode(t, vol); gid != 2345 || mode != root {
			t.Errorf("%s: root gid %d mode %v, want 2345 %v", name, gid, mode, root)
		}
		if ents, err := os.ReadDir(vol); err != nil || len(ents) != 0 {
			t.Errorf("%s: a new volume holds %v (%v), want nothing", name, ents, err)
		}
		if _, err := os.Stat(emptyDirReadyPath(p.Dir, name)); err != nil {
			t.Errorf("%s: no ready marker: %v", name, err)
		}
		if within(vol, emptyDirReadyPath(p.Dir, name)) {
			t.Errorf("%s: the ready marker is inside the volume", name)
		}
		// What a container does: files of its own, symlinks to the host,
		// and (as root in it) the volume root's mode and group changed.
		mustDo(t, os.WriteFile(filepath.Join(vol, "f"), nil, 0o600))
		mustDo(t, os.Mkdir(filepath.Join(vol, "d"), 0o700))
		mustDo(t, os.Symlink(file, filepath.Join(vol, "l")))
		mustDo(t, os.Symlink(dir, filepath.Join(vol, "ld")))
		for _, e := range []string{"f", "d", "l", "ld"} {
			// Not the setgid root's group they were born with.
			mustDo(t, os.Lchown(filepath.Join(vol, e), 0, 0))
		}
		mustDo(t, os.Chown(vol, 0, 0))
		mustDo(t, os.Chmod(vol, 0o755))
	}
	untouched := func(name string, rootGID uint32, rootMode fs.FileMode) {
		t.Helper()
		vol := emptyDirPath(p.Dir, name)
		if gid, mode := gidMode(t, vol); gid != rootGID || mode != rootMode {
			t.Errorf("%s: root gid %d mode %v, want %d %v", name, gid, mode, rootGID, rootMode)
		}
		for _, e := range []string{"f", "d", "l", "ld"} {
			if gid, _ := gidMode(t, filepath.Join(vol, e)); gid != 0 {
				t.Errorf("%s: %s was given group %d", name, e, gid)
			}
		}
		if _, mode := gidMode(t, filepath.Join(vol, "f")); mode != 0o600 {
			t.Errorf("%s: f mode %v, want 0600", name, mode)
		}
	}
	for range 2 {
		mustDo(t, Setup(p))
	}
	for _, name := range []string{"data", "mem"} {
		untouched(name, 0, fs.ModeDir|0o755)
	}
	unchanged()

	// Without its marker the root is set again, the content left alone.
	mustDo(t, os.Remove(emptyDirReadyPath(p.Dir, "data")))
	mustDo(t, Setup(p))
	untouched("data", 2345, root)
	untouched("mem", 0, fs.ModeDir|0o755)
	if _, err := os.Stat(emptyDirReadyPath(p.Dir, "data")); err != nil {
		t.Errorf("no ready marker after setting the root again: %v", err)
	}
	unchanged()

	// The tmpfs gone (a reboot): a new one, set up as new.
	mem := emptyDirPath(p.Dir, "mem")
	mustDo(t, unix.Unmount(mem, unix.MNT_DETACH))
	mustDo(t, Setup(p))
	var st unix.Statfs_t
	if err := unix.Statfs(mem, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Errorf("mem is not a tmpfs again: type %#x, err %v", st.Type, err)
	}
	if gid, mode := gidMode(t, mem); gid != 2345 || mode != root {
		t.Errorf("mem remounted: root gid %d mode %v, want 2345 %v", gid, mode, root)
	}
	if ents, _ := os.ReadDir(mem); len(ents) != 0 {
		t.Errorf("mem remounted holds %v", ents)
	}
}

// Without a fsGroup an emptyDir root is 0777 whatever the umask, and a
// root changed later (by a container) is not reset by Setup run again.
func TestEmptyDirNoFSGroup(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	p := testPod(t, v1.PodSpec{Volumes: []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}})
	mustDo(t, Setup(p))
	vol := emptyDirPath(p.Dir, "data")
	if _, mode := gidMode(t, vol); mode != fs.ModeDir|0o777 {
		t.Errorf("root mode %v, want 0777", mode)
	}
	mustDo(t, os.Chmod(vol, 0o700))
	mustDo(t, Setup(p))
	if _, mode := gidMode(t, vol); mode != fs.ModeDir|0o700 {
		t.Errorf("root mode %v after Setup again, want the container's 0700 kept", mode)
	}
}
