package daemon

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/podvisor/podvisor/internal/trust"
)

// checkLogDir checks --log-dir as the manifests directory is checked: the
// log driver and podvisor create, rotate and remove files there as root,
// so a user other than root who can write it (or a parent without the
// sticky bit) could plant links or swap directories under them. It is
// refused (podvisor does not start) unless --allow-insecure-manifests,
// with which it is a warning.
func checkLogDir(c *Config, log *slog.Logger) error {
	seen := map[string]bool{}
	problems := trust.Dir(c.LogDir, 0, seen)
	if real, err := filepath.EvalSymlinks(c.LogDir); err == nil && real != c.LogDir {
		problems = append(problems, trust.Dir(real, 0, seen)...)
	}
	if len(problems) == 0 {
		return nil
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.String())
	}
	if !c.AllowInsecureManifests {
		return fmt.Errorf("--log-dir %s: %s (fix with chmod go-w and chown root, or run with --allow-insecure-manifests)", c.LogDir, strings.Join(msgs, "; "))
	}
	log.Warn("insecure log directory", "dir", c.LogDir, "problems", strings.Join(msgs, "; "))
	return nil
}
