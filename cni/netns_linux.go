package cni

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// NewNetNS creates a new network namespace and bind-mounts it at path,
// creating the parent directory and an empty file to mount on.
//
// It is idempotent: when path already is a mounted network namespace it
// returns nil and leaves that namespace alone, so a pod worker that restarts
// half way through sandbox creation can call it again. A leftover empty file
// (a crash between creating the file and mounting) is reused.
//
// The namespace is created on a locked OS thread that is never unlocked:
// when the goroutine ends the Go runtime terminates the thread instead of
// returning it, still in the new namespace, to the scheduler's pool (the
// approach of containernetworking/plugins pkg/testutils/netns_linux.go).
func NewNetNS(path string) error {
	if IsNetNS(path) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create netns dir: %w", err)
	}
	created := false
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("create netns %s: is a directory", path)
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return fmt.Errorf("create netns file: %w", err)
		}
		f.Close()
		created = true
	} else {
		return fmt.Errorf("stat netns %s: %w", path, err)
	}

	errc := make(chan error, 1)
	go func() {
		// Deliberately never unlocked: see the function comment.
		runtime.LockOSThread()
		self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		orig, err := os.Open(self)
		if err != nil {
			errc <- fmt.Errorf("open current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare netns: %w", err)
			return
		}
		// The runtime cannot terminate the main thread; it parks it
		// instead. Moving back keeps /proc/self/ns/net truthful then.
		defer func() { _ = unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) }()
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind-mount netns at %s: %w", path, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		if created {
			_ = os.Remove(path)
		}
		return err
	}
	return nil
}

// RemoveNetNS unmounts the network namespace at path (MNT_DETACH, so a
// process still holding it open does not make this fail) and removes the
// file. A missing path is not an error. The namespace itself disappears
// with its last user.
func RemoveNetNS(path string) error {
	// A path mounted more than once (two racing creators) needs one unmount
	// per layer; EINVAL means nothing is mounted there any more.
	for range 16 {
		err := unix.Unmount(path, unix.MNT_DETACH)
		if err == nil {
			continue
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break
		}
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// IsNetNS reports whether path is a mounted network namespace, that is a
// file on nsfs (NSFS_MAGIC).
func IsNetNS(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}
