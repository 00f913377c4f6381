package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs at path unless something is mounted there
// already (Setup run again after a restart must keep the data). size 0
// leaves the kernel default (half of RAM); mode 0 the tmpfs default (1777).
func mountTmpfs(path string, size int64, mode fs.FileMode) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolve volume: %w", err)
	}
	mps, err := mountPoints()
	if err != nil {
		return err
	}
	for _, mp := range mps {
		if mp == real {
			return nil
		}
	}
	var o []string
	if mode != 0 {
		o = append(o, fmt.Sprintf("mode=%#o", mode.Perm()))
	}
	if size > 0 {
		o = append(o, "size="+strconv.FormatInt(size, 10))
	}
	opts := strings.Join(o, ",")
	if err := unix.Mount("tmpfs", real, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	return nil
}

// Cleanup unmounts everything mounted under dir (the emptyDir tmpfs
// volumes; anything else found there is unmounted too rather than
// recursed into) and removes dir entirely. A missing dir is fine. If a
// mount cannot be removed, dir is left in place and an error returned:
// deleting through a mount would delete the data behind it.
func Cleanup(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cleanup %s: %w", dir, err)
	}
	under, err := Under(real)
	if err != nil {
		return fmt.Errorf("cleanup %s: %w", dir, err)
	}
	for _, mp := range under {
		err := unix.Unmount(mp, 0)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(mp, unix.MNT_DETACH)
		}
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("cleanup %s: unmount %s: %w", dir, mp, err)
		}
	}
	// With nothing mounted below dir, nothing was unmounted: the check
	// that all went would read mountinfo again (a table of every mount on
	// the host, the other pods' included) to find the same nothing.
	if len(under) > 0 {
		left, err := Under(real)
		if err != nil {
			return fmt.Errorf("cleanup %s: %w", dir, err)
		}
		if len(left) > 0 {
			return fmt.Errorf("cleanup %s: still mounted: %s", dir, strings.Join(left, ", "))
		}
	}
	if err := os.RemoveAll(real); err != nil {
		return fmt.Errorf("cleanup %s: %w", dir, err)
	}
	if real != dir {
		// dir was a symlink to the pod directory.
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cleanup %s: %w", dir, err)
		}
	}
	return nil
}

// Under returns the mount points at or below dir, deepest first (a path
// mounted twice appears twice), read from this process's mountinfo.
func Under(dir string) ([]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	under := make([]string, 0, len(infos))
	for _, i := range infos {
		under = append(under, i.Mountpoint)
	}
	sort.SliceStable(under, func(i, j int) bool {
		return strings.Count(under[i], "/") > strings.Count(under[j], "/")
	})
	return under, nil
}

// mountPoints lists every mount point (one entry per mount).
func mountPoints() ([]string, error) {
	infos, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	mps := make([]string, 0, len(infos))
	for _, i := range infos {
		mps = append(mps, i.Mountpoint)
	}
	return mps, nil
}
