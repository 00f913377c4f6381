package nsfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// New creates a namespace of the given kind (unix.CLONE_NEWNET,
// unix.CLONE_NEWIPC, unix.CLONE_NEWUTS) and bind-mounts it at path. When
// path already holds a namespace, New returns nil and leaves it alone.
func New(path string, kind int) error {
	if Is(path) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create namespace dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create namespace file %s: %w", path, err)
	}
	if f != nil {
		f.Close()
	}
	name, err := kindName(kind)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	// The thread that unshares is locked for the whole operation. It returns
	// to its original namespace afterwards; only when that fails does it stay
	// locked, so the runtime discards it and no other goroutine ever runs in
	// the wrong namespace.
	go func() {
		runtime.LockOSThread()
		self := fmt.Sprintf("/proc/%d/task/%d/ns/%s", os.Getpid(), unix.Gettid(), name)
		orig, err := os.Open(self)
		if err != nil {
			errc <- fmt.Errorf("open current %s namespace: %w", name, err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(kind); err != nil {
			errc <- fmt.Errorf("unshare %s namespace: %w", name, err)
			return
		}
		err = unix.Mount(self, path, "none", unix.MS_BIND, "")
		if err != nil {
			err = fmt.Errorf("bind %s namespace to %s: %w", name, path, err)
		}
		if unix.Setns(int(orig.Fd()), kind) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// Remove unmounts and removes a namespace file. A missing path is not an
// error.
func Remove(path string) error {
	if path == "" {
		return nil
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove namespace file %s: %w", path, err)
	}
	return nil
}

// Is reports whether path is a mounted namespace file.
func Is(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

func kindName(kind int) (string, error) {
	switch kind {
	case unix.CLONE_NEWNET:
		return "net", nil
	case unix.CLONE_NEWIPC:
		return "ipc", nil
	case unix.CLONE_NEWUTS:
		return "uts", nil
	}
	return "", fmt.Errorf("unsupported namespace kind %#x", kind)
}
