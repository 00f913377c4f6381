package logread

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrRefused is wrapped by the error of a log file that is not read: a
// symlink (at the file or on the way to it from the log directory), a path
// leading out of the log directory, or something that is not a regular
// file (a FIFO, a device, a directory).
var ErrRefused = errors.New("refused")

// fileID names an inode: what the follower holds open, and what a path
// names now.
type fileID struct{ dev, ino uint64 }

// containerDir is a container's log directory, opened beneath the log
// directory with no symlink followed. Every file of a log is listed,
// looked at and opened through it, so that nothing in the log directory
// (which a pod with a hostPath volume of it may write) can make the
// reader open a file elsewhere.
type containerDir struct {
	path string // for errors
	fd   int
}

// splitLive splits live, "<log dir>/<pod>/<container>/<n>.log" (as
// internal/layout lays logs out), into the log directory and the
// container's directory relative to it.
func splitLive(live string) (root, rel string) {
	dir := filepath.Dir(live)
	root = filepath.Dir(filepath.Dir(dir))
	// dir is root with two more components: Rel cannot fail.
	rel, _ = filepath.Rel(root, dir)
	return root, rel
}

// openRoot opens the log directory holding live: the one path trusted,
// root's configuration. A missing one is -1 and no error.
func openRoot(live string) (int, error) {
	root, _ := splitLive(live)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("open log dir %s: %w", root, err)
	}
	return fd, nil
}

// openContainerDir opens the directory of live beneath the log directory
// open at root. A missing one is nil and no error.
func openContainerDir(root int, live string) (*containerDir, error) {
	if root < 0 {
		return nil, nil
	}
	_, rel := splitLive(live)
	path := filepath.Dir(live)
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, refusal(path, err)
	}
	return &containerDir{path: path, fd: fd}, nil
}

func (d *containerDir) close() {
	if d != nil {
		unix.Close(d.fd)
	}
}

// open opens the regular file name of d for reading. A missing file is
// nil and no error.
func (d *containerDir) open(name string) (*os.File, error) {
	path := filepath.Join(d.path, name)
	// O_NONBLOCK: a FIFO put in the file's place must not block the
	// open; O_NOCTTY: nor a terminal become podvisor's.
	fd, err := openBeneath(d.fd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, refusal(path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat log %s: %w", path, err)
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("log %s: %w: %s, not a regular file", path, ErrRefused, kind(uint32(st.Mode)))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// id returns the inode name names in d, not following a symlink; ok is
// false when there is no such file.
func (d *containerDir) id(name string) (fileID, bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return fileID{}, false, nil
	}
	if err != nil {
		return fileID{}, false, fmt.Errorf("stat log %s: %w", filepath.Join(d.path, name), err)
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true, nil
}

// names lists d's entries.
func (d *containerDir) names() ([]string, error) {
	// A descriptor of its own: each listing starts at the beginning.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("list log files in %s: %w", d.path, err)
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list log files in %s: %w", d.path, err)
	}
	return names, nil
}

// idOf returns the inode open at f.
func idOf(f *os.File) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// refusal words an error of openBeneath for path.
func refusal(path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("log %s: %w: a symlink on the way (not followed)", path, ErrRefused)
	case errors.Is(err, unix.EXDEV), errors.Is(err, errOutside):
		return fmt.Errorf("log %s: %w: the path leads outside the log directory", path, ErrRefused)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("log %s: %w: a symlink (not followed) or a file where a directory should be", path, ErrRefused)
	}
	return fmt.Errorf("open log %s: %w", path, err)
}

// errOutside: a path with a ".." or absolute component.
var errOutside = errors.New("path leads outside its directory")

// walkBeneath opens rel below dirfd one component at a time, each with
// O_NOFOLLOW (a symlink fails with ELOOP), as kubelet's doSafeOpen does:
// for kernels without openat2. Components on the way are opened as
// directories; the last with flags.
func walkBeneath(dirfd int, rel string, flags int) (int, error) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if filepath.IsAbs(rel) {
		return -1, errOutside
	}
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for i, name := range parts {
		if name == "" || name == "." {
			if i < len(parts)-1 {
				continue
			}
			name = "."
		}
		if name == ".." {
			unix.Close(fd)
			return -1, errOutside
		}
		fl := unix.O_RDONLY | unix.O_DIRECTORY
		if i == len(parts)-1 {
			fl = flags
		}
		child, err := unix.Openat(fd, name, fl|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = child
	}
	return fd, nil
}

// kind names a file type for a refusal.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
}

// closeRoot closes a descriptor of openRoot's.
func closeRoot(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
