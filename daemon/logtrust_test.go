package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLogDir: a log dir others can write is refused, naming the flag,
// the path and why, unless --allow-insecure-manifests.
func TestCheckLogDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	os.Mkdir(dir, 0o755)
	c := Default()
	c.LogDir = dir
	log := slog.New(slog.DiscardHandler)
	if err := checkLogDir(&c, log); err != nil {
		t.Fatalf("secure log dir: %v", err)
	}
	os.Chmod(dir, 0o777)
	err := checkLogDir(&c, log)
	if err == nil || !strings.Contains(err.Error(), "--log-dir "+dir+": "+dir+": mode 0777 is group- or world-writable") || !strings.Contains(err.Error(), "--allow-insecure-manifests") {
		t.Fatalf("world-writable log dir: %v", err)
	}
	c.AllowInsecureManifests = true
	if err := checkLogDir(&c, log); err != nil {
		t.Fatalf("allowed: %v", err)
	}
}

// TestCheckLogDirSymlinkHop: a log dir reached through a symlink in a
// world-writable directory is refused even with the sticky bit (whoever
// can write there can point the link elsewhere), though the directory it
// leads to is sound.
func TestCheckLogDirSymlinkHop(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	shared := filepath.Join(base, "shared")
	for _, d := range []string{real, shared} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(shared, "logs")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.LogDir = link
	err := checkLogDir(&c, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--log-dir "+link+": ") || !strings.Contains(err.Error(), shared+": mode 0777 is group- or world-writable (holds the symlink "+link+" -> "+real+")") {
		t.Fatalf("log dir through a link in a world-writable dir: %v", err)
	}
	c.AllowInsecureManifests = true
	if err := checkLogDir(&c, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("allowed: %v", err)
	}
}
