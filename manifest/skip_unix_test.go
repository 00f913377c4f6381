//go:build unix

package manifest

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestScanLogsSpecialFilesOnce: FIFOs, sockets, devices and symlinks to
// them are skipped, each said once at Info (the default level) with the
// reason, as a file with the wrong extension is.
func TestScanLogsSpecialFilesOnce(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	mkfifo := func(path string) {
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(target, path string) {
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	mkfifo(filepath.Join(dir, "fifo.yaml"))
	mkfifo(filepath.Join(outside, "fifo"))
	symlink(filepath.Join(outside, "fifo"), filepath.Join(dir, "fifo-link.yaml"))
	symlink("/dev/null", filepath.Join(dir, "null.yaml"))
	l, err := net.Listen("unix", filepath.Join(dir, "sock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l2, err := net.Listen("unix", filepath.Join(outside, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	symlink(filepath.Join(outside, "sock"), filepath.Join(dir, "sock-link.yaml"))
	writeFile(t, filepath.Join(dir, "web.yaml"), basePod)

	var logs logBuffer
	sc := newScanner(dir, node, slog.New(slog.NewTextHandler(&logs, nil)))
	for range 3 {
		snap, _ := rescan(sc)
		if len(snap.Pods) != 1 || len(snap.Errors) != 0 {
			t.Fatalf("pods %v errors %v, want only web", keys(snap), snap.Errors)
		}
	}
	out := logs.String()
	for name, reason := range map[string]string{
		"fifo.yaml":      "a FIFO; only regular files are read",
		"fifo-link.yaml": "symlink to a FIFO; only regular files are read",
		"sock.yaml":      "a socket; only regular files are read",
		"sock-link.yaml": "symlink to a socket; only regular files are read",
		"null.yaml":      "symlink to a character device; only regular files are read",
	} {
		want := `level=INFO msg="skipping file in manifest directory" file=` + filepath.Join(dir, name) + ` reason="` + reason + `"`
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", want, n, out)
		}
	}
}
