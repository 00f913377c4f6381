package embedded

import (
	"os"
	"path/filepath"
	"strconv"
)

// moveToCgroup puts the daemon in its own cgroup in every hierarchy, so a
// service manager stopping podvisor's cgroup does not stop it. Failures
// are logged at Debug: the daemon runs anyway.
func (d *Daemon) moveToCgroup(pid int) {
	for _, dir := range cgroupDirs(d.opts.CgroupRoot, d.opts.Cgroup) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			d.log.Debug("create embedded containerd's cgroup", "cgroup", dir, "err", err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			d.log.Debug("move embedded containerd to its cgroup", "cgroup", dir, "err", err)
		}
	}
}

// cgroupDirs lists the directories of cgroup rel in every hierarchy
// mounted under root: one on the unified hierarchy (v2), one per
// controller directory on v1.
func cgroupDirs(root, rel string) []string {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return []string{filepath.Join(root, rel)}
	}
	entries, _ := os.ReadDir(root)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(root, e.Name(), rel))
		}
	}
	return out
}
