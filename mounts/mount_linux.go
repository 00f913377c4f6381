package mounts

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs at path unless something is mounted there
// already (Setup run again after a restart must keep the data). size 0
// leaves the kernel default (half of RAM).
func mountTmpfs(path string, size int64) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolve emptyDir: %w", err)
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
	opts := "mode=0777"
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
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
	under, err := mountsUnder(real)
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
	if left, err := mountsUnder(real); err != nil {
		return fmt.Errorf("cleanup %s: %w", dir, err)
	} else if len(left) > 0 {
		return fmt.Errorf("cleanup %s: still mounted: %s", dir, strings.Join(left, ", "))
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

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	mps, err := mountPoints()
	if err != nil {
		return nil, err
	}
	var under []string
	for _, mp := range mps {
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			under = append(under, mp)
		}
	}
	sort.SliceStable(under, func(i, j int) bool {
		return strings.Count(under[i], "/") > strings.Count(under[j], "/")
	})
	return under, nil
}

// mountPoints lists the mount points of podvisor's mount namespace from
// /proc/self/mountinfo, one entry per mount (a path mounted twice appears
// twice).
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var mps []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mps = append(mps, unescapeOctal(fields[4]))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return mps, nil
}

// unescapeOctal undoes the kernel's \ooo escaping of space, tab, newline
// and backslash in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
