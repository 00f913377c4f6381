//go:build linux

package trust

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mkdir makes a directory with exactly mode (no umask).
func mkdir(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// Every hop of a symlink chain is checked: a link kept in a directory
// others can write (sticky or not), or a target in one, is a problem; the
// same chain through private directories is not.
func TestOpenChecksEverySymlinkHop(t *testing.T) {
	uid := os.Getuid()
	base := t.TempDir()
	mkdir(t, base, 0o755)
	good := filepath.Join(base, "good")
	mkdir(t, good, 0o755)
	write(t, filepath.Join(good, "ca.crt"), "CA", 0o644)
	open := filepath.Join(base, "open")
	mkdir(t, open, 0o777)
	sticky := filepath.Join(base, "sticky")
	mkdir(t, sticky, 0o777|os.ModeSticky)
	write(t, filepath.Join(open, "ca.crt"), "CA", 0o644)
	links := filepath.Join(base, "links")
	mkdir(t, links, 0o755)

	for _, tc := range []struct {
		name, link, target, bad string
	}{
		{"private chain", filepath.Join(links, "a"), filepath.Join(good, "ca.crt"), ""},
		{"relative private chain", filepath.Join(links, "b"), "../good/ca.crt", ""},
		{"link in a world-writable dir", filepath.Join(open, "l"), filepath.Join(good, "ca.crt"), open},
		{"link in a sticky world-writable dir", filepath.Join(sticky, "l"), filepath.Join(good, "ca.crt"), sticky},
		{"target in a world-writable dir", filepath.Join(links, "c"), filepath.Join(open, "ca.crt"), open},
		{"second hop through a world-writable dir", filepath.Join(links, "d"), filepath.Join(open, "l"), open},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Symlink(tc.target, tc.link); err != nil {
				t.Fatal(err)
			}
			b, problems, err := ReadFile(tc.link, uid, 1<<10)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != "CA" {
				t.Errorf("read %q", b)
			}
			if tc.bad == "" {
				if len(problems) > 0 {
					t.Errorf("problems %v, want none", problems)
				}
				return
			}
			found := false
			for _, p := range problems {
				found = found || p.Path == tc.bad
			}
			if !found {
				t.Errorf("problems %v, want one of %s", problems, tc.bad)
			}
			if _, err := ReadTrusted(tc.link, uid, 1<<10); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("ReadTrusted: %v, want ErrUntrusted naming %s", err, tc.bad)
			}
		})
	}
	// A file others can write, and a file in a world-writable (not
	// sticky) parent.
	write(t, filepath.Join(good, "open.crt"), "x", 0o666)
	if ps, err := CheckFile(filepath.Join(good, "open.crt"), uid); err != nil || len(ps) != 1 {
		t.Errorf("group/world-writable file: %v %v", ps, err)
	}
	if ps, err := CheckFile(filepath.Join(open, "ca.crt"), uid); err != nil || len(ps) != 1 || ps[0].Path != open {
		t.Errorf("file in a world-writable dir: %v %v", ps, err)
	}
	if ps, err := CheckFile(filepath.Join(good, "missing"), uid); err != nil || ps != nil {
		t.Errorf("missing file: %v %v", ps, err)
	}
	if _, _, err := ReadFile(good, uid, 10); err == nil {
		t.Error("a directory read as a file")
	}
	if ps, err := CheckDir(open, uid); err != nil || len(ps) != 1 {
		t.Errorf("CheckDir world-writable: %v %v", ps, err)
	}
	if ps, err := CheckDir(sticky, uid); err != nil || len(ps) != 1 {
		t.Errorf("CheckDir sticky leaf: %v %v", ps, err)
	}
	if ps, err := CheckDir(good, uid); err != nil || len(ps) != 0 {
		t.Errorf("CheckDir private: %v %v", ps, err)
	}
}

// What is read is what was checked: a file swapped in after Open (a
// world-writable one here) is not what the descriptor reads.
func TestOpenReadsTheCheckedDescriptor(t *testing.T) {
	uid := os.Getuid()
	dir := t.TempDir()
	mkdir(t, dir, 0o755)
	p := filepath.Join(dir, "policy.yaml")
	write(t, p, "checked", 0o644)
	f, problems, err := Open(p, uid)
	if err != nil || len(problems) > 0 {
		t.Fatalf("Open: %v %v", problems, err)
	}
	defer f.Close()
	evil := filepath.Join(dir, "evil")
	write(t, evil, "swapped", 0o666)
	if err := os.Rename(evil, p); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "checked" {
		t.Fatalf("read %q %v, want the checked file's content", b, err)
	}
	// ReadTrusted, with the file swapped between its checks and its read:
	// the content is the checked file's.
	write(t, p, "checked", 0o644)
	testHookBeforeRead = func() {
		write(t, evil, "swapped", 0o666)
		if err := os.Rename(evil, p); err != nil {
			t.Fatal(err)
		}
	}
	b, err = ReadTrusted(p, uid, 100)
	testHookBeforeRead = nil
	if err != nil || string(b) != "checked" {
		t.Fatalf("ReadTrusted with a swap before the read: %q %v, want the checked content", b, err)
	}
	// Opened again, the swapped file is refused.
	if _, err := ReadTrusted(p, uid, 100); !errors.Is(err, ErrUntrusted) {
		t.Errorf("swapped file: %v, want ErrUntrusted", err)
	}
	// Too large.
	if _, _, err := ReadFile(p, uid, 3); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("limit: %v", err)
	}
	// A fifo does not hang Open.
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip(err)
	}
	if _, _, err := Open(fifo, uid); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: %v", err)
	}
}
