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
