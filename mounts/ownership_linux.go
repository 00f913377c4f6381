package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// The permission bits kubelet's SetVolumeOwnership adds
// (pkg/volume/volume_linux.go).
const (
	rwMask   fs.FileMode = 0o660
	roMask   fs.FileMode = 0o440
	execMask fs.FileMode = 0o110
)

// setOwnership applies a pod's fsGroup to the volume at root as kubelet's
// SetVolumeOwnership does: every file, directory and symlink below it gets
// group fsGroup (lchown, the owner kept); files and directories get the
// group's read (readOnly) or read-write bits added to their mode,
// directories also the search bits and setgid, so what is created in them
// later is the group's too; a symlink's mode is never changed (chmod would
// change its target's). With policy OnRootMismatch the walk is skipped when
// the root already has the group, the bits and setgid. A nil fsGroup does
// nothing.
func setOwnership(root string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && !needsOwnership(root, *fsGroup, readOnly) {
		return nil
	}
	gid := int(*fsGroup)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil // removed meanwhile (an old version)
			}
			return err
		}
		if err := os.Lchown(p, -1, gid); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		mask := rwMask
		if readOnly {
			mask = roMask
		}
		if info.IsDir() {
			mask |= fs.ModeSetgid | execMask
		}
		return os.Chmod(p, info.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky)|mask)
	})
	if err != nil {
		return fmt.Errorf("fsGroup %d: %w", gid, err)
	}
	return nil
}

// needsOwnership is kubelet's requiresPermissionChange: whether root lacks
// the group, the permission bits or (a directory) setgid.
func needsOwnership(root string, gid int64, readOnly bool) bool {
	fi, err := os.Stat(root)
	if err != nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid || !fi.IsDir() {
		return true
	}
	want := rwMask
	if readOnly {
		want = roMask
	}
	want |= execMask
	return fi.Mode().Perm()&want != want || fi.Mode()&fs.ModeSetgid == 0
}
