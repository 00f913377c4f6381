package containerd

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/moby/sys/mountinfo"
)

// isMountPoint reports whether something is mounted at path; a path that
// does not exist is not one.
func isMountPoint(path string) (bool, error) {
	ok, err := mountinfo.Mounted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check mount %s: %w", path, err)
	}
	return ok, nil
}

// mountAll mounts a snapshot's mounts at target (an overlay of the
// image's layers, or a read-only bind mount of its one layer); a mount
// that half-succeeded is undone.
func mountAll(ms []mount.Mount, target string) error {
	if err := mount.All(ms, target); err != nil {
		if uerr := mount.UnmountAll(target, 0); uerr != nil {
			return errors.Join(err, uerr)
		}
		return err
	}
	return nil
}
