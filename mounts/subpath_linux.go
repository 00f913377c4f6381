package mounts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// errSwapped: a path checked free of symlinks leading out had one when it
// was opened; a container may be racing podvisor.
var errSwapped = errors.New("a symlink appeared in the path after it was checked")

// openat2 is unix.Openat2; tests replace it to take the fallback walk of
// kernels before 5.6.
var openat2 = unix.Openat2

// stageSubPath opens the checked subPath target without following any
// symlink and without leaving the volume root, creates its missing
// directories through descriptors, and bind-mounts what it opened at
// staging (kubelet's doBindSubPath): whatever the container does to the
// volume after the check, the mount is of the inode that was opened, never
// of a path resolved again later. A symlink found on the way (one swapped
// in after the check) is a refusal. An earlier staging mount of the same
// inode is kept; one of another inode is replaced.
func stageSubPath(t subPathTarget, staging string) error {
	if subPathChecked != nil {
		subPathChecked(t.path())
	}
	fd, err := openSubPath(t)
	if err != nil {
		return fmt.Errorf("subPath %q: %w", t.subPath, err)
	}
	defer unix.Close(fd)
	if subPathOpened != nil {
		subPathOpened(t.path())
	}
	if err := bindFD(fd, staging); err != nil {
		return fmt.Errorf("subPath %q: %w", t.subPath, err)
	}
	return nil
}

// openSubPath returns a descriptor of t, beneath t.root, with no symlink
// followed on the way.
func openSubPath(t subPathTarget) (int, error) {
	// t.root has its symlinks resolved, and comes from the manifest's
	// author, not from the container: it is the only path trusted.
	rootFD, err := unix.Open(t.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open volume: %w", err)
	}
	fd := rootFD
	if t.existing != "." {
		fd, err = openBeneath(rootFD, t.existing)
		unix.Close(rootFD)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", t.existing, err)
		}
	}
	for _, name := range t.create {
		child, err := mkdirBeneath(fd, name, t.perm)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("create %s: %w", name, err)
		}
		fd = child
	}
	return fd, nil
}

// openBeneath opens rel below dirfd as an O_PATH descriptor, refusing any
// symlink and any step out of dirfd: openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS where the kernel has it (5.6), else one O_NOFOLLOW
// openat per component.
func openBeneath(dirfd int, rel string) (int, error) {
	fd, err := openat2(dirfd, rel, &unix.OpenHow{
		// No O_NOFOLLOW: with it, a trailing symlink would be opened
		// itself instead of refused.
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM), errors.Is(err, unix.E2BIG):
		// No openat2 (an old kernel, or a seccomp filter that denies it).
		fd, err = walkBeneath(dirfd, rel)
		if err != nil {
			return -1, err
		}
	case errors.Is(err, unix.ELOOP):
		return -1, errSwapped
	case errors.Is(err, unix.EXDEV):
		return -1, errors.New("the path leads outside the volume")
	default:
		return -1, err
	}
	if err := refuseSymlink(fd); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// walkBeneath opens rel below dirfd one component at a time, each with
// O_NOFOLLOW, as kubelet's doSafeOpen does.
func walkBeneath(dirfd int, rel string) (int, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(rel, "/") {
		if name == "" || name == "." || name == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("unexpected component %q", name)
		}
		child, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		// O_PATH|O_NOFOLLOW opens a symlink itself rather than failing.
		if err := refuseSymlink(child); err != nil {
			unix.Close(child)
			return -1, err
		}
		fd = child
	}
	return fd, nil
}

func refuseSymlink(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return errSwapped
	}
	return nil
}

// mkdirBeneath creates directory name in dirfd with mode perm (an
// existing directory is fine) and returns a descriptor of it; a symlink or
// anything else than a directory in its place is refused.
func mkdirBeneath(dirfd int, name string, perm os.FileMode) (int, error) {
	err := unix.Mkdirat(dirfd, name, uint32(perm))
	created := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	// O_DIRECTORY: a FIFO put in its place fails instead of blocking.
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// ELOOP or ENOTDIR (with O_DIRECTORY) for a symlink: say which.
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, errSwapped
		}
		return -1, err
	}
	if created {
		// Mkdirat's mode went through the umask.
		if err := unix.Fchmod(fd, uint32(perm)); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// bindFD bind-mounts (recursively, as the volume itself would be) the file
// or directory open at fd onto staging, creating staging as the same kind.
func bindFD(fd int, staging string) error {
	var src unix.Stat_t
	if err := unix.Fstat(fd, &src); err != nil {
		return err
	}
	isDir := src.Mode&unix.S_IFMT == unix.S_IFDIR
	if err := os.MkdirAll(filepath.Dir(staging), 0o700); err != nil {
		return fmt.Errorf("create staging dir: %w", err)
	}
	// A container run before (a restart, a podvisor restart) left its
	// staging mount: keep it if it shows this very inode.
	for {
		mounted, err := mountinfo.Mounted(staging)
		if errors.Is(err, os.ErrNotExist) || (err == nil && !mounted) {
			break
		}
		if err != nil {
			return fmt.Errorf("check staging mount: %w", err)
		}
		if sameInode(staging, &src) {
			return nil
		}
		if err := unix.Unmount(staging, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount old staging mount: %w", err)
		}
	}
	if err := makeMountPoint(staging, isDir); err != nil {
		return err
	}
	// The magic link names the opened inode; the kernel does not resolve
	// the volume path again.
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), staging, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount: %w", err)
	}
	if !sameInode(staging, &src) {
		_ = unix.Unmount(staging, unix.MNT_DETACH)
		return errors.New("bind mount: the staging mount does not show the opened file")
	}
	return nil
}

// makeMountPoint makes staging a directory or an empty file, replacing
// what is there if it is of the other kind.
func makeMountPoint(staging string, isDir bool) error {
	if fi, err := os.Lstat(staging); err == nil {
		if fi.IsDir() == isDir && (isDir || fi.Mode().IsRegular()) {
			return nil
		}
		if err := os.Remove(staging); err != nil {
			return fmt.Errorf("replace staging mount point: %w", err)
		}
	}
	if isDir {
		if err := os.Mkdir(staging, 0o700); err != nil {
			return fmt.Errorf("create staging mount point: %w", err)
		}
		return nil
	}
	// Any kind of file (regular, device, socket) binds onto a regular one.
	f, err := os.OpenFile(staging, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create staging mount point: %w", err)
	}
	return f.Close()
}

func sameInode(path string, st *unix.Stat_t) bool {
	var got unix.Stat_t
	return unix.Stat(path, &got) == nil && got.Dev == st.Dev && got.Ino == st.Ino
}
