package crilog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSymlinkNotFollowed: a symlink planted at the log path (and at its
// status file) is not followed: the file it points to (a passwd-like file
// of root's) is neither appended to, nor truncated at rotation, nor
// overwritten; the records are dropped and counted instead.
func TestSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "passwd")
	const content = "root:x:0:0:root:/root:/bin/sh\n"
	if err := os.WriteFile(secret, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "pod", "c")
	os.MkdirAll(logs, 0o755)
	path := filepath.Join(logs, "0.log")
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, DropsPath(path)); err != nil {
		t.Fatal(err)
	}
	w := OpenPolicy(path, Policy{MaxSize: 64, MaxFiles: 2})
	for range 5 {
		if err := w.WriteRecord("stdout", false, []byte(strings.Repeat("x", 40))); !errors.Is(err, ErrDropped) {
			t.Errorf("write through a planted symlink: %v, want ErrDropped", err)
		}
	}
	w.Close()
	if b, err := os.ReadFile(secret); err != nil || string(b) != content {
		t.Fatalf("the symlink's target was changed: %q, %v", b, err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted link was replaced: %v %v", fi, err)
	}
}
