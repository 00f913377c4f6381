package embedded

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/podvisor/podvisor/internal/cgroupfs"
)

// moveToCgroup puts the daemon in its own cgroup in every hierarchy, so a
// service manager stopping podvisor's cgroup does not stop it. Failures
// are logged at Debug: the daemon runs anyway.
func (d *Daemon) moveToCgroup(pid int) {
	for _, dir := range cgroupfs.Dirs(d.opts.CgroupRoot, d.opts.Cgroup) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			d.log.Debug("create embedded containerd's cgroup", "cgroup", dir, "err", err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			d.log.Debug("move embedded containerd to its cgroup", "cgroup", dir, "err", err)
		}
	}
}
