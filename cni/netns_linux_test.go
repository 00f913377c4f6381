package cni

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
)

func requireRoot(t *testing.T) {
	t.Helper()
	prereq.Root(t, "network namespaces, mounts")
}

func TestNetNSLifecycle(t *testing.T) {
	requireRoot(t)
	path := filepath.Join(t.TempDir(), "deep", "dir", "ns1")
	t.Cleanup(func() { _ = RemoveNetNS(path) })

	if IsNetNS(path) {
		t.Fatal("IsNetNS before creation")
	}
	before, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call finds the namespace mounted
		if err := NewNetNS(path); err != nil {
			t.Fatalf("NewNetNS: %v", err)
		}
		if !IsNetNS(path) {
			t.Fatal("IsNetNS = false after NewNetNS")
		}
	}
	created := nsID(t, path)
	if created == before {
		t.Fatalf("new namespace %s is the process's own namespace", created)
	}
	if after, _ := os.Readlink("/proc/self/ns/net"); after != before {
		t.Fatalf("process moved from %s to namespace %s", before, after)
	}
	if err := NewNetNS(path); err != nil || nsID(t, path) != created {
		t.Fatalf("NewNetNS on a mounted namespace replaced it (err %v)", err)
	}

	if IsNetNS(filepath.Dir(path)) {
		t.Error("IsNetNS of a plain directory")
	}

	if err := RemoveNetNS(path); err != nil {
		t.Fatalf("RemoveNetNS: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("netns file still there after RemoveNetNS: %v", err)
	}
	if err := RemoveNetNS(path); err != nil {
		t.Fatalf("RemoveNetNS of a missing path: %v", err)
	}

	// A leftover empty file (crash before the mount) is reused.
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := NewNetNS(path); err != nil {
		t.Fatalf("NewNetNS over a leftover file: %v", err)
	}
	if !IsNetNS(path) {
		t.Fatal("IsNetNS = false after NewNetNS over a leftover file")
	}
}

func TestNewNetNSOnDirectoryFails(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	if err := NewNetNS(dir); err == nil {
		_ = RemoveNetNS(dir)
		t.Fatal("NewNetNS on a directory succeeded")
	}
}

// nsID returns the namespace identity ("net:[4026...]") of a bind-mounted
// namespace, read by stat: the inode of an nsfs file is the namespace ID.
func nsID(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return "net:[" + itoa(inode(fi)) + "]"
}
