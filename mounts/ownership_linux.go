package mounts

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// The permission bits kubelet's SetVolumeOwnership adds
// (pkg/volume/volume_linux.go), as raw mode bits for fchmod.
const (
	rwMask   uint32 = 0o660
	roMask   uint32 = 0o440
	execMask uint32 = 0o110
)

// setOwnership applies a pod's fsGroup to the volume at root as kubelet's
// SetVolumeOwnership does: every file, directory and symlink below it gets
// group fsGroup (the owner kept); files and directories get the group's
// read (readOnly) or read-write bits added to their mode, directories also
// the search bits and setgid, so what is created in them later is the
// group's too; a symlink's mode is never changed. With policy
// OnRootMismatch nothing is changed when the root already has the group,
// the bits and setgid. A nil fsGroup does nothing.
//
// Only trees podvisor writes are walked (configMap, secret, downwardAPI and
// projected volumes), and even those by descriptor: root is opened once,
// each entry below it relative to its directory's descriptor, never
// following a symlink nor leaving its directory, and changed through what
// was opened. A symlink or a directory swapped in during the walk is never
// resolved, so nothing outside root is changed. An emptyDir, which its
// containers write, is never walked (see setRootOwnership).
func setOwnership(root string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	gid := int(*fsGroup)
	fd, err := openRoot(root)
	if err != nil {
		return fmt.Errorf("fsGroup %d: %w", gid, err)
	}
	defer unix.Close(fd)
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("fsGroup %d: %w", gid, err)
		}
		if !needsOwnership(&st, *fsGroup, readOnly) {
			return nil
		}
	}
	if err := ownTree(fd, gid, readOnly); err != nil {
		return fmt.Errorf("fsGroup %d: %w", gid, err)
	}
	return nil
}

// setRootOwnership gives the directory at root, an emptyDir volume created
// empty, its mode (emptyDirPerm whatever the umask) and, with a fsGroup,
// that group, the read-write and search bits and setgid: what kubelet's
// SetVolumeOwnership does to a fresh, empty emptyDir, without walking
// anything a container may have put there since. Only root's own
// descriptor is changed.
func setRootOwnership(root string, fsGroup *int64) error {
	fd, err := openRoot(root)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	mode := uint32(emptyDirPerm.Perm())
	if fsGroup != nil {
		if err := unix.Fchown(fd, -1, int(*fsGroup)); err != nil {
			return fmt.Errorf("fsGroup %d: chown volume: %w", *fsGroup, err)
		}
		mode |= rwMask | execMask | unix.S_ISGID
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("chmod volume: %w", err)
	}
	return nil
}

// openRoot opens a volume root, a directory of podvisor's own (no part of
// its path is a container's), refusing a symlink in its place.
func openRoot(root string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open volume %s: %w", root, err)
	}
	return fd, nil
}

// ownTree applies the group and mode bits to the directory open at dirfd
// and, depth first, to everything below it. An entry removed during the
// walk is skipped (an old version of a content volume going away).
func ownTree(dirfd int, gid int, readOnly bool) error {
	if err := ownFD(dirfd, gid, readOnly); err != nil {
		return err
	}
	names, err := readNames(dirfd)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := ownEntry(dirfd, name, gid, readOnly); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// ownEntry applies the group and mode bits to name, one entry of the
// directory open at dirfd.
func ownEntry(dirfd int, name string, gid int, readOnly bool) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return chownLink(dirfd, name, gid)
	}
	// An O_PATH descriptor: opening a FIFO or a device for I/O could block
	// or act on the device; this one only names the inode.
	fd, err := openBeneath(dirfd, name)
	if errors.Is(err, errSwapped) {
		// A symlink now, put there after the Fstatat: it is treated as
		// one, its target never looked at.
		return chownLink(dirfd, name, gid)
	}
	if err != nil {
		return err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// "." of the descriptor is the directory opened, no name resolved
		// again; a readable descriptor lists it and takes fchmod. The
		// O_PATH one is closed first: one descriptor a level, however deep
		// the tree.
		dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
		defer unix.Close(dir)
		return ownTree(dir, gid, readOnly)
	}
	defer unix.Close(fd)
	if err := unix.Fchownat(fd, "", -1, gid, unix.AT_EMPTY_PATH); err != nil {
		return err
	}
	// fchmod refuses an O_PATH descriptor; its /proc/self/fd link names the
	// very inode opened, so the chmod cannot reach another one.
	return unix.Chmod(fdPath(fd), withBits(st.Mode, false, readOnly))
}

// ownFD applies the group and mode bits to the directory open at fd.
func ownFD(fd int, gid int, readOnly bool) error {
	if err := unix.Fchown(fd, -1, gid); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	return unix.Fchmod(fd, withBits(st.Mode, st.Mode&unix.S_IFMT == unix.S_IFDIR, readOnly))
}

// chownLink gives the symlink name itself the group; its mode means nothing
// (a chmod would change its target's).
func chownLink(dirfd int, name string, gid int) error {
	return unix.Fchownat(dirfd, name, -1, gid, unix.AT_SYMLINK_NOFOLLOW)
}

// withBits is mode (its permission, setuid, setgid and sticky bits) with
// the fsGroup's bits added.
func withBits(mode uint32, dir, readOnly bool) uint32 {
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	if dir {
		mask |= execMask | unix.S_ISGID
	}
	return mode&0o7777 | mask
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// readNames lists the directory open at dirfd, "." and ".." left out. The
// listing reads from the descriptor's offset: each directory is listed once,
// through a descriptor of its own.
func readNames(dirfd int) ([]string, error) {
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(dirfd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list directory: %w", err)
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// needsOwnership is kubelet's requiresPermissionChange: whether the root
// whose status is st lacks the group, the permission bits or (a directory)
// setgid.
func needsOwnership(st *unix.Stat_t, gid int64, readOnly bool) bool {
	if int64(st.Gid) != gid || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return true
	}
	want := rwMask
	if readOnly {
		want = roMask
	}
	want |= execMask
	return st.Mode&want != want || st.Mode&unix.S_ISGID == 0
}
