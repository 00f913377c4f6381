//go:build linux

package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Open opens the regular file at path for reading and returns the
// problems of the file and of every directory and link on the way to it.
// The path is walked one component at a time from a descriptor of the
// directory before it (openat with O_NOFOLLOW), so what is checked is
// what is opened: each directory is checked on its descriptor as a
// parent (Reasons with leaf false); a symlink is followed by hand, and
// the directory holding it, and the directory holding the file when a
// link led there, must not be writable by others even with the sticky
// bit; the file is checked on the descriptor returned, from which the
// caller reads.
func Open(path string, trustedUID int) (*os.File, []Problem, error) {
	return open(path, trustedUID, false)
}

// CheckDir returns the problems of the directory at path (a leaf: not
// writable by others even with the sticky bit) and of every directory and
// link on the way to it, walked as Open walks; a directory that does not
// exist has none.
func CheckDir(path string, trustedUID int) ([]Problem, error) {
	f, problems, err := open(path, trustedUID, true)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.Close()
	return problems, nil
}

func open(path string, trustedUID int, wantDir bool) (*os.File, []Problem, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	w := &walk{trustedUID: trustedUID, seen: map[string]bool{}}
	// pathErr names the component that failed, and path when that is
	// where the walk was (no link followed), as os.Open would.
	pathErr := func(name string, err error) error {
		if p := w.join(name); p != abs {
			return fmt.Errorf("open %s: %w", path, &fs.PathError{Op: "open", Path: p, Err: err})
		}
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer w.closeDir()
	if err := w.root(); err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	todo := components(abs)
	hops := 0
	linked := false
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == "." || name == "" {
			continue
		}
		last := len(todo) == 0
		if last && !wantDir {
			fd, err := unix.Openat(w.dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
			if err == nil {
				f := os.NewFile(uintptr(fd), path)
				fi, err := f.Stat()
				if err != nil {
					f.Close()
					return nil, nil, fmt.Errorf("open %s: %w", path, err)
				}
				if !fi.Mode().IsRegular() {
					f.Close()
					return nil, nil, fmt.Errorf("open %s: %s is not a regular file", path, w.join(name))
				}
				if linked {
					w.strictDir("holds the file " + path + " reached through a symlink")
				}
				for _, r := range Reasons(fi, true, trustedUID, "") {
					w.problems = append(w.problems, Problem{Path: w.join(name), Reason: r})
				}
				// The descriptor blocks as a file does from now on.
				if err := unix.SetNonblock(fd, false); err != nil {
					f.Close()
					return nil, nil, fmt.Errorf("open %s: %w", path, err)
				}
				return f, w.problems, nil
			}
			if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.EMLINK) {
				return nil, nil, pathErr(name, err)
			}
			// A symlink: followed below.
		}
		fd, err := unix.Openat(w.dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, nil, pathErr(name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			hops++
			if hops > maxLinkHops {
				unix.Close(fd)
				return nil, nil, fmt.Errorf("open %s: more than %d symlinks", path, maxLinkHops)
			}
			target, err := readlinkFd(fd)
			unix.Close(fd)
			if err != nil {
				return nil, nil, fmt.Errorf("open %s: readlink %s: %w", path, w.join(name), err)
			}
			// Whoever can write the directory holding a link can point
			// it elsewhere, sticky bit or not.
			w.strictDir("holds the symlink " + w.join(name) + " -> " + target)
			linked = true
			todo = append(components(target), todo...)
			if filepath.IsAbs(target) {
				if err := w.root(); err != nil {
					return nil, nil, fmt.Errorf("open %s: %w", path, err)
				}
			}
		case unix.S_IFDIR:
			if last && !wantDir {
				unix.Close(fd)
				return nil, nil, fmt.Errorf("open %s: %s is a directory", path, w.join(name))
			}
			w.enter(fd, name)
			if last {
				w.strictDir("")
				f := os.NewFile(uintptr(w.dirfd), path)
				w.dirfd = -1
				return f, w.problems, nil
			}
		default:
			unix.Close(fd)
			return nil, nil, fmt.Errorf("open %s: %s is not a directory", path, w.join(name))
		}
	}
	if wantDir { // the path was / (or ended in "." components)
		w.strictDir("")
		f := os.NewFile(uintptr(w.dirfd), path)
		w.dirfd = -1
		return f, w.problems, nil
	}
	return nil, nil, fmt.Errorf("open %s: no file named", path)
}

// walk is Open's position: the directory it is in, by descriptor, and
// the path it took to get there (for messages).
type walk struct {
	trustedUID int
	dirfd      int
	dir        string
	problems   []Problem
	// seen holds the problems already reported, so a directory passed
	// twice is named once.
	seen map[string]bool
}

func (w *walk) join(name string) string {
	if w.dir == "/" {
		return "/" + name
	}
	return w.dir + "/" + name
}

func (w *walk) closeDir() {
	if w.dirfd > 0 {
		unix.Close(w.dirfd)
	}
	w.dirfd = -1
}

// root moves to /.
func (w *walk) root() error {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	w.set(fd, "/")
	return nil
}

// enter moves into the directory fd, name in the current one: ".."
// included, by descriptor.
func (w *walk) enter(fd int, name string) {
	dir := w.join(name)
	if name == ".." {
		dir = filepath.Dir(w.dir)
	}
	w.set(fd, dir)
}

func (w *walk) set(fd int, dir string) {
	w.closeDir()
	w.dirfd, w.dir = fd, dir
	w.check(false, "")
}

// strictDir checks the current directory as a leaf: not writable by
// others at all.
func (w *walk) strictDir(why string) { w.check(true, why) }

func (w *walk) check(leaf bool, why string) {
	var st unix.Stat_t
	if err := unix.Fstat(w.dirfd, &st); err != nil {
		w.add(Problem{Path: w.dir, Reason: "cannot stat: " + err.Error()})
		return
	}
	for _, r := range Reasons(statInfo{name: w.dir, st: st}, leaf, w.trustedUID, why) {
		w.add(Problem{Path: w.dir, Reason: r})
	}
}

func (w *walk) add(p Problem) {
	if k := p.String(); !w.seen[k] {
		w.seen[k] = true
		w.problems = append(w.problems, p)
	}
}

// components splits a path into its names; an absolute path's first is
// "" (the root, which the caller is at).
func components(p string) []string {
	return strings.Split(p, "/")
}

func readlinkFd(fd int) (string, error) {
	for size := 256; size <= 1<<16; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
	return "", errors.New("link target too long")
}
