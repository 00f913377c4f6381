package cgroupfs

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestDirsAndRemoveTree(t *testing.T) {
	v1 := t.TempDir()
	os.MkdirAll(filepath.Join(v1, "cpu"), 0o755)
	os.MkdirAll(filepath.Join(v1, "memory"), 0o755)
	os.WriteFile(filepath.Join(v1, "not-a-hierarchy"), nil, 0o644)
	if IsV2(v1) {
		t.Fatal("v1 root taken for v2")
	}
	want := []string{filepath.Join(v1, "cpu", "p/x"), filepath.Join(v1, "memory", "p/x")}
	if got := Dirs(v1, "p/x"); !reflect.DeepEqual(got, want) {
		t.Errorf("v1 dirs %v, want %v", got, want)
	}
	v2 := t.TempDir()
	os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpu memory"), 0o644)
	if got := Dirs(v2, "p"); !IsV2(v2) || !reflect.DeepEqual(got, []string{filepath.Join(v2, "p")}) {
		t.Errorf("v2 dirs %v", got)
	}
	tree := filepath.Join(v1, "cpu", "pod", "c1", "c2")
	os.MkdirAll(tree, 0o755)
	if err := RemoveTree(filepath.Join(v1, "cpu", "pod")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(v1, "cpu", "pod")); !os.IsNotExist(err) {
		t.Errorf("tree left: %v", err)
	}
	if err := RemoveTree(filepath.Join(v1, "gone")); err != nil {
		t.Errorf("missing tree: %v", err)
	}
}

// Symlinked aliases of v1 hierarchies (cpu → cpu,cpuacct) are skipped.
func TestDirsSkipsAliases(t *testing.T) {
	v2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpu memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Dirs(v2, "podvisor-containerd"); !slices.Equal(got, []string{filepath.Join(v2, "podvisor-containerd")}) {
		t.Errorf("v2 dirs = %v", got)
	}
	v1 := t.TempDir()
	for _, c := range []string{"cpu,cpuacct", "memory"} {
		if err := os.Mkdir(filepath.Join(v1, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("cpu,cpuacct", filepath.Join(v1, "cpu")); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(v1, "cpu,cpuacct", "pc"), filepath.Join(v1, "memory", "pc")}
	if got := Dirs(v1, "pc"); !slices.Equal(got, want) {
		t.Errorf("v1 dirs = %v, want %v (symlinked aliases skipped)", got, want)
	}
}
