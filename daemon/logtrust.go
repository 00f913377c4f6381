package daemon

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/podvisor/podvisor/internal/trust"
)

// checkLogDir checks --log-dir as the manifests directory is checked: the
// log driver and podvisor create, rotate and remove files there as root,
// so a user other than root who can write it (or a parent without the
// sticky bit, or the directory of a symlink on the way) could plant links
// or swap directories under them. The path is walked by descriptor
// (trust.CheckDir), each symlink hop checked where it is, so what is
// checked is the directory the path names. It is refused (podvisor does
// not start) unless --allow-insecure-manifests, with which it is a
// warning.
func checkLogDir(c *Config, log *slog.Logger) error {
	problems, err := trust.CheckDir(c.LogDir, 0)
	if err != nil {
		return fmt.Errorf("--log-dir %s: %w", c.LogDir, err)
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
