package cni

import (
	"github.com/podvisor/podvisor/internal/nsfs"
	"golang.org/x/sys/unix"
)

// NewNetNS creates a new network namespace and bind-mounts it at path,
// creating the parent directory and an empty file to mount on.
//
// It is idempotent: when path already is a mounted namespace it returns nil
// and leaves that namespace alone, so a pod worker that restarts half way
// through sandbox creation can call it again. A leftover empty file (a
// crash between creating the file and mounting) is reused.
func NewNetNS(path string) error { return nsfs.New(path, unix.CLONE_NEWNET) }

// RemoveNetNS unmounts (MNT_DETACH) and removes path; a missing path is not
// an error.
func RemoveNetNS(path string) error { return nsfs.Remove(path) }

// IsNetNS reports whether path is a mounted namespace file.
func IsNetNS(path string) bool { return nsfs.Is(path) }
