package loopfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// MountExt4 makes a new ext4 filesystem of mib MiB in the file img and
// mounts it on dir (made if missing) through a loop device: a small,
// block-backed filesystem for the tests and benchmarks that fill a disk or
// count the bytes written to one. It needs truncate, mkfs.ext4 (e2fsprogs)
// and loop devices.
func MountExt4(img, dir string, mib int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, c := range [][]string{
		{"truncate", "-s", fmt.Sprintf("%dM", mib), img},
		{"mkfs.ext4", "-q", "-F", img},
		{"mount", "-o", "loop", img, dir},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}

// UnmountExt4 undoes MountExt4: it unmounts dir (an unmount already done,
// e.g. by the podvisor whose state dir it was, is no error), detaches the
// loop devices still backed by img (a loop mount is autocleared; this
// makes sure) and removes img.
func UnmountExt4(img, dir string) error {
	err := syscall.Unmount(dir, 0)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		err = nil // not (or no longer) a mount point
	}
	if err != nil {
		err = fmt.Errorf("unmount %s: %w", dir, err)
	}
	out, _ := exec.Command("losetup", "-j", img).Output()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if dev, _, ok := strings.Cut(l, ":"); ok {
			_ = exec.Command("losetup", "-d", dev).Run()
		}
	}
	os.Remove(img)
	return err
}
