package mounts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// withHook sets one of the subPath test hooks for the test.
func withHook(t *testing.T, hook *func(string), f func(string)) {
	t.Helper()
	*hook = f
	t.Cleanup(func() { *hook = nil })
}

// withoutOpenat2 makes the test take the O_NOFOLLOW walk of kernels
// without openat2.
func withoutOpenat2(t *testing.T) {
	t.Helper()
	openat2 = func(int, string, *unix.OpenHow) (int, error) { return -1, unix.ENOSYS }
	t.Cleanup(func() { openat2 = unix.Openat2 })
}

// The CVE-2017-1002101 race: a container that can write the volume swaps
// a directory (or file) of the subPath for a symlink to a host path after
// podvisor checked the path, or after it opened it. What ends up mounted
// is a refusal or the original inode, never the symlink's target.
func TestSubPathSwap(t *testing.T) {
	requireRoot(t)
	const (
		checked = "after the check"
		opened  = "after the open"
	)
	tests := []struct {
		name    string
		subPath string
		swap    string // the component replaced by a symlink to outside
		when    string
		walk    bool // no openat2
		refused bool
	}{
		{name: "leaf dir after check", subPath: "a/b", swap: "a/b", when: checked, refused: true},
		{name: "parent dir after check", subPath: "a/b", swap: "a", when: checked, refused: true},
		{name: "file after check", subPath: "a/f.conf", swap: "a/f.conf", when: checked, refused: true},
		{name: "leaf dir after open", subPath: "a/b", swap: "a/b", when: opened},
		{name: "parent dir after open", subPath: "a/b", swap: "a", when: opened},
		{name: "file after open", subPath: "a/f.conf", swap: "a/f.conf", when: opened},
		{name: "leaf dir after check, walk", subPath: "a/b", swap: "a/b", when: checked, walk: true, refused: true},
		{name: "parent dir after check, walk", subPath: "a/b", swap: "a", when: checked, walk: true, refused: true},
		{name: "file after check, walk", subPath: "a/f.conf", swap: "a/f.conf", when: checked, walk: true, refused: true},
		{name: "leaf dir after open, walk", subPath: "a/b", swap: "a/b", when: opened, walk: true},
		// A directory to create appears as a symlink before it is made.
		{name: "created dir raced", subPath: "a/new/dir", swap: "a/new", when: checked, refused: true},
		{name: "created dir raced, walk", subPath: "a/new/dir", swap: "a/new", when: checked, walk: true, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := setupPod(t)
			vol := filepath.Join(p.Dir, "volumes", "empty-dir", "data")
			mustMkdir(t, filepath.Join(vol, "a", "b"))
			mustWrite(t, filepath.Join(vol, "a", "b", "inside"), "inside")
			mustWrite(t, filepath.Join(vol, "a", "f.conf"), "inside")
			outside := t.TempDir()
			mustMkdir(t, filepath.Join(outside, "b"))
			mustWrite(t, filepath.Join(outside, "b", "secret"), "secret")
			mustWrite(t, filepath.Join(outside, "f.conf"), "secret")
			mustWrite(t, filepath.Join(outside, "secret"), "secret")
			if tt.walk {
				withoutOpenat2(t)
			}

			swapped := filepath.Join(vol, tt.swap)
			orig := swapped + ".orig"
			target := filepath.Join(outside, strings.TrimPrefix(tt.swap, "a/"))
			if tt.swap == "a" || tt.swap == "a/new" {
				target = outside
			}
			swap := func(string) {
				if _, err := os.Lstat(swapped); err == nil {
					if err := os.Rename(swapped, orig); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Symlink(target, swapped); err != nil {
					t.Fatal(err)
				}
			}
			hook := &subPathChecked
			if tt.when == opened {
				hook = &subPathOpened
			}
			withHook(t, hook, swap)

			c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/mnt", SubPath: tt.subPath}}}
			ms, err := ContainerMounts(p, c, "")
			if _, lerr := os.Lstat(swapped); lerr != nil {
				t.Fatalf("the hook did not swap %s: %v", tt.swap, lerr)
			}
			// Whatever happened, no mount under the pod shows the target.
			under, uerr := Under(p.Dir)
			if uerr != nil {
				t.Fatal(uerr)
			}
			// What the subPath resolves to through the symlink.
			leak := filepath.Join(outside, strings.TrimPrefix(tt.subPath, "a/"))
			for _, mp := range under {
				for _, p := range []string{outside, target, leak} {
					if sameFileIfExists(mp, p) {
						t.Errorf("%s mounts %s, outside the volume", mp, p)
					}
				}
			}
			if _, err := os.Stat(filepath.Join(outside, "dir")); err == nil {
				t.Error("a directory was created outside the volume")
			}
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "symlink") {
					t.Fatalf("error = %v, want a refusal naming the symlink", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContainerMounts: %v", err)
			}
			src := mountAt(ms, "/mnt").Source
			want := orig
			if tt.swap == "a" {
				want = filepath.Join(vol, "a.orig", "b")
			}
			if !sameFile(t, src, want) {
				t.Errorf("staging mount %s is not the original %s", src, tt.subPath)
			}
			if tt.subPath == "a/f.conf" {
				if got := readFile(t, src); got != "inside" {
					t.Errorf("mounted file holds %q, want the original's", got)
				}
			} else if _, err := os.Stat(filepath.Join(src, "inside")); err != nil {
				t.Errorf("mounted directory is not the original: %v", err)
			}
		})
	}
}

// A restart computes the mounts again: the staging mount is reused while
// it shows the same inode, replaced when the directory was replaced, never
// stacked; Cleanup unmounts it without deleting the volume's data.
func TestSubPathStaging(t *testing.T) {
	requireRoot(t)
	p, hostDir := setupPod(t)
	mustMkdir(t, filepath.Join(hostDir, "conf"))
	mustWrite(t, filepath.Join(hostDir, "conf", "app.conf"), "v1")
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "host", MountPath: "/etc/app", SubPath: "conf"},
		{Name: "host", MountPath: "/etc/app.conf", SubPath: "conf/app.conf"},
	}}
	dirStage := filepath.Join(p.Dir, "volume-subpaths", "host", "app", "0")
	fileStage := filepath.Join(p.Dir, "volume-subpaths", "host", "app", "1")
	for i := 0; i < 2; i++ {
		ms, err := ContainerMounts(p, c, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := mountAt(ms, "/etc/app").Source; got != dirStage {
			t.Fatalf("source = %s, want %s", got, dirStage)
		}
		if got := mountAt(ms, "/etc/app.conf").Source; got != fileStage {
			t.Fatalf("source = %s, want %s", got, fileStage)
		}
	}
	for _, s := range []string{dirStage, fileStage} {
		if n := countMounts(t, s); n != 1 {
			t.Errorf("%d mounts at %s after two calls, want 1", n, s)
		}
	}
	if got := readFile(t, fileStage); got != "v1" {
		t.Errorf("staged file = %q", got)
	}
	if got := permOf(t, filepath.Join(p.Dir, "volume-subpaths")); got != 0o700 {
		t.Errorf("staging dir mode = %v, want 0700", got)
	}

	// The directory is replaced by another one: the next run gets it.
	if err := os.Rename(filepath.Join(hostDir, "conf"), filepath.Join(hostDir, "conf.old")); err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, filepath.Join(hostDir, "conf"))
	mustWrite(t, filepath.Join(hostDir, "conf", "app.conf"), "v2")
	if _, err := ContainerMounts(p, c, ""); err != nil {
		t.Fatal(err)
	}
	if !sameFile(t, dirStage, filepath.Join(hostDir, "conf")) || readFile(t, fileStage) != "v2" {
		t.Error("staging mounts were not replaced by the new directory and file")
	}
	for _, s := range []string{dirStage, fileStage} {
		if n := countMounts(t, s); n != 1 {
			t.Errorf("%d mounts at %s after the replacement, want 1", n, s)
		}
	}

	if err := Cleanup(p.Dir); err != nil {
		t.Fatal(err)
	}
	if under, _ := Under(filepath.Dir(p.Dir)); len(under) != 0 {
		t.Errorf("mounts left after Cleanup: %v", under)
	}
	if _, err := os.Stat(p.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod dir left: %v", err)
	}
	if got := readFile(t, filepath.Join(hostDir, "conf", "app.conf")); got != "v2" {
		t.Errorf("volume data after Cleanup = %q, want it kept", got)
	}
}

// Without openat2 the walk gives the same answers as with it.
func TestSubPathWalk(t *testing.T) {
	requireRoot(t)
	withoutOpenat2(t)
	p, _ := setupPod(t)
	vol := filepath.Join(p.Dir, "volumes", "empty-dir", "data")
	mustMkdir(t, filepath.Join(vol, "inner", "deeper"))
	if err := os.Symlink("inner", filepath.Join(vol, "in")); err != nil {
		t.Fatal(err)
	}
	for subPath, want := range map[string]string{
		"inner/deeper":  "inner/deeper",
		"in/deeper":     "inner/deeper",
		"./inner/.":     "inner",
		"new/sub":       "new/sub",
		"in/made/there": "inner/made/there",
	} {
		c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/mnt", SubPath: subPath}}}
		ms, err := ContainerMounts(p, c, "")
		if err != nil {
			t.Errorf("%s: %v", subPath, err)
			continue
		}
		if !sameFile(t, mountAt(ms, "/mnt").Source, filepath.Join(vol, want)) {
			t.Errorf("%s: staging mount is not %s", subPath, want)
		}
	}
}

func sameFileIfExists(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
