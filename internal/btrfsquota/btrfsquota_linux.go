package btrfsquota

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by the errors about a directory whose size
// btrfs cannot limit.
var ErrUnsupported = errors.New("btrfs qgroup limits are not available")

// The kernel's interface (linux/btrfs.h, linux/btrfs_tree.h), which
// x/sys/unix does not define. The ioctl numbers encode the sizes of the
// structs below; a test holds them to each other.
const (
	iocSubvolCreate  = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
	iocSnapDestroy   = 0x5000940f // _IOW(0x94, 15, struct btrfs_ioctl_vol_args)
	iocTreeSearch    = 0xd0009411 // _IOWR(0x94, 17, struct btrfs_ioctl_search_args)
	iocInoLookup     = 0xd0009412 // _IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args)
	iocQgroupLimit   = 0x8030942b // _IOR(0x94, 43, struct btrfs_ioctl_qgroup_limit_args)
	iocSnapDestroyV2 = 0x5000943f // _IOW(0x94, 63, struct btrfs_ioctl_vol_args_v2)

	pathNameMax      = 4087 // BTRFS_PATH_NAME_MAX
	subvolNameMax    = 4039 // BTRFS_SUBVOL_NAME_MAX
	inoLookupPathMax = 4080 // BTRFS_INO_LOOKUP_PATH_MAX
	searchBufSize    = 4096 - 104

	// firstFreeObjectID is the inode number of a subvolume's root
	// directory (BTRFS_FIRST_FREE_OBJECTID).
	firstFreeObjectID = 256
	rootTreeObjectID  = 1   // BTRFS_ROOT_TREE_OBJECTID
	quotaTreeObjectID = 8   // BTRFS_QUOTA_TREE_OBJECTID
	rootRefKey        = 156 // BTRFS_ROOT_REF_KEY
	qgroupStatusKey   = 240 // BTRFS_QGROUP_STATUS_KEY
	qgroupLimitKey    = 244 // BTRFS_QGROUP_LIMIT_KEY

	qgroupStatusFlagOn = 1 << 0 // BTRFS_QGROUP_STATUS_FLAG_ON
	qgroupLimitMaxRfer = 1 << 0 // BTRFS_QGROUP_LIMIT_MAX_RFER
)

// volArgs is struct btrfs_ioctl_vol_args.
type volArgs struct {
	Fd   int64
	Name [pathNameMax + 1]byte
}

// volArgsV2 is struct btrfs_ioctl_vol_args_v2, its unions as their
// largest members (unused[4], name).
type volArgsV2 struct {
	Fd      int64
	Transid uint64
	Flags   uint64
	Unused  [4]uint64
	Name    [subvolNameMax + 1]byte
}

// qgroupLimit is struct btrfs_qgroup_limit.
type qgroupLimit struct {
	Flags   uint64
	MaxRfer uint64
	MaxExcl uint64
	RsvRfer uint64
	RsvExcl uint64
}

// qgroupLimitArgs is struct btrfs_ioctl_qgroup_limit_args.
type qgroupLimitArgs struct {
	Qgroupid uint64
	Lim      qgroupLimit
}

// inoLookupArgs is struct btrfs_ioctl_ino_lookup_args.
type inoLookupArgs struct {
	Treeid   uint64
	Objectid uint64
	Name     [inoLookupPathMax]byte
}

// searchKey is struct btrfs_ioctl_search_key.
type searchKey struct {
	TreeID      uint64
	MinObjectid uint64
	MaxObjectid uint64
	MinOffset   uint64
	MaxOffset   uint64
	MinTransid  uint64
	MaxTransid  uint64
	MinType     uint32
	MaxType     uint32
	NrItems     uint32
	Unused      uint32
	Unused1     uint64
	Unused2     uint64
	Unused3     uint64
	Unused4     uint64
}

// searchArgs is struct btrfs_ioctl_search_args.
type searchArgs struct {
	Key searchKey
	Buf [searchBufSize]byte
}

// searchHeaderSize is the size of struct btrfs_ioctl_search_header, which
// precedes each item in searchArgs.Buf: transid, objectid, offset (u64),
// type, len (u32), in the host's byte order.
const searchHeaderSize = 32

// IsBtrfs reports whether the file open at fd is on btrfs.
func IsBtrfs(fd int) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return false, fmt.Errorf("statfs: %w", err)
	}
	return st.Type == unix.BTRFS_SUPER_MAGIC, nil
}

// IsSubvolume reports whether the directory open at fd is the root of a
// btrfs subvolume.
func IsSubvolume(fd int) (bool, error) {
	if ok, err := IsBtrfs(fd); err != nil || !ok {
		return false, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Ino == firstFreeObjectID, nil
}

// Create makes name, in the btrfs directory open at dirfd, a new empty
// subvolume (as mkdir, its mode 0777 less the umask). Where quotas are
// enabled, btrfs gives it its qgroup.
func Create(dirfd int, name string) error {
	var a volArgs
	if err := setName(a.Name[:], name); err != nil {
		return err
	}
	if err := ioctl(dirfd, iocSubvolCreate, unsafe.Pointer(&a)); err != nil {
		return fmt.Errorf("create subvolume %s: %w", name, err)
	}
	return nil
}

// Destroy deletes the subvolume name, in the directory open at dirfd,
// with everything in it: the subvolumes nested in it first, deepest
// first, then it. Without CAP_SYS_ADMIN in the host's user namespace it
// fails with EPERM (rmdir(2) deletes an emptied subvolume without it).
func Destroy(dirfd int, name string) error {
	err := destroy(dirfd, name)
	if !errors.Is(err, unix.ENOTEMPTY) {
		return err
	}
	fd, oerr := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return fmt.Errorf("delete subvolume %s: %w", name, oerr)
	}
	defer unix.Close(fd)
	nested, nerr := Nested(fd)
	if nerr != nil {
		return fmt.Errorf("%w (listing the subvolumes in it: %w)", err, nerr)
	}
	for i := len(nested) - 1; i >= 0; i-- {
		if err := destroyBeneath(fd, nested[i]); err != nil {
			return fmt.Errorf("delete subvolume %s: %w", name, err)
		}
	}
	return destroy(dirfd, name)
}

// destroyBeneath deletes the subvolume at path under the directory open
// at fd, no symlink nor mount crossed on the way.
func destroyBeneath(fd int, path string) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		return destroy(fd, name)
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	parent, err := unix.Openat2(fd, dir, &how)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(parent)
	if err := destroy(parent, name); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// destroy deletes the subvolume name in the directory open at dirfd; it
// fails with ENOTEMPTY when the subvolume holds another.
func destroy(dirfd int, name string) error {
	var a volArgsV2
	if err := setName(a.Name[:], name); err != nil {
		return err
	}
	err := ioctl(dirfd, iocSnapDestroyV2, unsafe.Pointer(&a))
	if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EOPNOTSUPP) {
		// Before Linux 5.7.
		var v1 volArgs
		copy(v1.Name[:], name)
		err = ioctl(dirfd, iocSnapDestroy, unsafe.Pointer(&v1))
	}
	if err != nil {
		return fmt.Errorf("delete subvolume %s: %w", name, err)
	}
	return nil
}

func setName(dst []byte, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || len(name) >= len(dst) {
		return fmt.Errorf("invalid subvolume name %q", name)
	}
	copy(dst, name)
	return nil
}

// Check reports, changing nothing, whether the filesystem of the file
// open at fd can limit a subvolume: nil, or an error wrapping
// ErrUnsupported that says why not and what would fix it.
func Check(fd int) error {
	if ok, err := IsBtrfs(fd); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: not a btrfs filesystem", ErrUnsupported)
	}
	return status(fd)
}

// status: the filesystem of the file open at fd has quotas enabled, and
// they can be read and set from here.
func status(fd int) error {
	data, found, err := quotaItem(fd, qgroupStatusKey, 0)
	if err != nil {
		return quotaError(fd, err, "read the qgroup status")
	}
	if !found || !statusOn(data) {
		return notEnabled(fd)
	}
	return nil
}

// quotaError is err, of the quota call what on the filesystem open at
// fd, as the caller reports it: quotas not enabled (no quota tree,
// ENOTCONN) and no capability to use them (EPERM) are ErrUnsupported
// with the reason; anything else is an error naming what.
func quotaError(fd int, err error, what string) error {
	switch {
	case errors.Is(err, errNoQuotas), errors.Is(err, unix.ENOTCONN):
		return notEnabled(fd)
	case errors.Is(err, unix.EPERM):
		return noCapability()
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Set limits the subvolume whose root directory is open at fd to limit
// bytes (its qgroup's referenced bytes: max_rfer).
func Set(fd int, limit int64) error {
	if limit <= 0 {
		return fmt.Errorf("limit %d is not positive", limit)
	}
	if ok, err := IsSubvolume(fd); err != nil {
		return err
	} else if !ok {
		return plainDirectory(fd)
	}
	id, err := subvolumeID(fd)
	if err != nil {
		return err
	}
	data, found, err := quotaItem(fd, qgroupLimitKey, id)
	if err != nil {
		return quotaError(fd, err, fmt.Sprintf("read the limit of qgroup 0/%d", id))
	}
	if found && limitHolds(data, uint64(limit)) {
		return nil
	}
	a := qgroupLimitArgs{Qgroupid: id, Lim: qgroupLimit{Flags: qgroupLimitMaxRfer, MaxRfer: uint64(limit)}}
	err = ioctl(fd, iocQgroupLimit, unsafe.Pointer(&a))
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%w: the subvolume has no qgroup 0/%d (btrfs qgroup create 0/%d %s)", ErrUnsupported, id, id, mountPoint(fd))
	case err != nil:
		return quotaError(fd, err, fmt.Sprintf("limit qgroup 0/%d", id))
	}
	return nil
}

func notEnabled(fd int) error {
	return fmt.Errorf("%w: quotas are not enabled on the btrfs filesystem (btrfs quota enable %s)", ErrUnsupported, mountPoint(fd))
}

// noCapability: the qgroup ioctls (and the tree search that reads the
// qgroups) need CAP_SYS_ADMIN in the host's user namespace, which a
// process in a user namespace of its own (an unprivileged container)
// does not have, whatever its capabilities there.
func noCapability() error {
	return fmt.Errorf("%w: btrfs qgroups cannot be read or set without CAP_SYS_ADMIN in the host's user namespace (podvisor runs in a user namespace of its own, as in an unprivileged container)", ErrUnsupported)
}

// plainDirectory is why a directory that is not a subvolume cannot be
// limited, and what would.
func plainDirectory(fd int) error {
	const plain = "the directory is not a subvolume but a plain directory, made while quotas could not be set, and btrfs limits subvolumes only: it stays unenforced once they can be, unless its data is moved into a new subvolume (btrfs subvolume create) put in its place"
	if err := status(fd); err != nil {
		if errors.Is(err, ErrUnsupported) {
			return fmt.Errorf("%w; %s", err, plain)
		}
		return err
	}
	return fmt.Errorf("%w: %s", ErrUnsupported, plain)
}

// errNoQuotas: the filesystem has no quota tree, quotas were never
// enabled or were disabled.
var errNoQuotas = errors.New("no quota tree")

// subvolumeID is the ID of the subvolume the file open at fd is in.
func subvolumeID(fd int) (uint64, error) {
	a := inoLookupArgs{Objectid: firstFreeObjectID}
	if err := ioctl(fd, iocInoLookup, unsafe.Pointer(&a)); err != nil {
		return 0, fmt.Errorf("look up the subvolume ID: %w", err)
	}
	return a.Treeid, nil
}

// Nested lists the subvolumes inside the subvolume whose root directory
// is open at fd, at any depth: their paths relative to that directory,
// each after the subvolume that holds it. A qgroup counts only its own
// subvolume's data, so theirs is not counted against a limit on this one.
// It needs CAP_SYS_ADMIN in the host's user namespace (EPERM).
func Nested(fd int) ([]string, error) {
	id, err := subvolumeID(fd)
	if err != nil {
		return nil, err
	}
	type sub struct {
		id   uint64
		path string // relative to fd, "" for the subvolume itself
	}
	var out []string
	queue := []sub{{id: id}}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		refs, err := rootRefs(fd, parent.id)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			dir, err := dirPath(fd, parent.id, r.dirid)
			if err != nil {
				return nil, fmt.Errorf("subvolume %d: %w", r.id, err)
			}
			p := filepath.Join(parent.path, dir, r.name)
			out = append(out, p)
			queue = append(queue, sub{id: r.id, path: p})
		}
	}
	return out, nil
}

// rootRef is a ROOT_REF item of the root tree: subvolume id is linked as
// name in the directory dirid of its parent subvolume.
type rootRef struct {
	id, dirid uint64
	name      string
}

// rootRefs are the subvolumes linked directly in subvolume parent.
func rootRefs(fd int, parent uint64) ([]rootRef, error) {
	var out []rootRef
	var a searchArgs
	a.Key = searchKey{
		TreeID:      rootTreeObjectID,
		MinObjectid: parent, MaxObjectid: parent,
		MaxOffset:  math.MaxUint64,
		MaxTransid: math.MaxUint64,
		MinType:    rootRefKey, MaxType: rootRefKey,
	}
	for {
		a.Key.NrItems = math.MaxUint32
		if err := ioctl(fd, iocTreeSearch, unsafe.Pointer(&a)); err != nil {
			return nil, fmt.Errorf("search the subvolumes in subvolume %d: %w", parent, err)
		}
		refs, last := parseRootRefs(a.Key.NrItems, a.Buf[:], parent)
		out = append(out, refs...)
		if a.Key.NrItems == 0 || last == math.MaxUint64 {
			return out, nil
		}
		a.Key.MinOffset = last + 1
	}
}

// parseRootRefs reads n items of a tree search's result buffer: the
// ROOT_REF items of parent (struct btrfs_root_ref: dirid, sequence,
// name_len, little-endian, then the name), and the last item's offset.
func parseRootRefs(n uint32, buf []byte, parent uint64) (refs []rootRef, last uint64) {
	ne, le := binary.NativeEndian, binary.LittleEndian
	for i := uint32(0); i < n && len(buf) >= searchHeaderSize; i++ {
		objectid, offset := ne.Uint64(buf[8:]), ne.Uint64(buf[16:])
		typ, size := ne.Uint32(buf[24:]), int(ne.Uint32(buf[28:]))
		if size > len(buf)-searchHeaderSize {
			break
		}
		item := buf[searchHeaderSize : searchHeaderSize+size]
		buf = buf[searchHeaderSize+size:]
		last = offset
		if objectid != parent || typ != rootRefKey || len(item) < 18 {
			continue
		}
		nameLen := int(le.Uint16(item[16:]))
		if nameLen > len(item)-18 {
			continue
		}
		refs = append(refs, rootRef{id: offset, dirid: le.Uint64(item), name: string(item[18 : 18+nameLen])})
	}
	return refs, last
}

// dirPath is the path of directory dirid of subvolume tree, relative to
// the subvolume's root ("" for the root itself).
func dirPath(fd int, tree, dirid uint64) (string, error) {
	if dirid == firstFreeObjectID {
		return "", nil
	}
	a := inoLookupArgs{Treeid: tree, Objectid: dirid}
	if err := ioctl(fd, iocInoLookup, unsafe.Pointer(&a)); err != nil {
		return "", fmt.Errorf("look up directory %d: %w", dirid, err)
	}
	name, _, _ := bytes.Cut(a.Name[:], []byte{0})
	return string(name), nil
}

// quotaItem is the data of the quota tree's item of key (0, typ, offset).
func quotaItem(fd int, typ uint32, offset uint64) ([]byte, bool, error) {
	var a searchArgs
	a.Key = searchKey{
		TreeID:    quotaTreeObjectID,
		MinOffset: offset, MaxOffset: offset,
		MaxTransid: math.MaxUint64,
		MinType:    typ, MaxType: typ,
		NrItems: 1,
	}
	if err := ioctl(fd, iocTreeSearch, unsafe.Pointer(&a)); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, false, errNoQuotas
		}
		return nil, false, err
	}
	data, found := firstItem(a.Key.NrItems, a.Buf[:], typ, offset)
	return data, found, nil
}

// firstItem is the data of the first item of a tree search's result
// buffer, if it is the item of key (0, typ, offset).
func firstItem(n uint32, buf []byte, typ uint32, offset uint64) ([]byte, bool) {
	if n == 0 || len(buf) < searchHeaderSize {
		return nil, false
	}
	ne := binary.NativeEndian
	objectid, off := ne.Uint64(buf[8:]), ne.Uint64(buf[16:])
	t, size := ne.Uint32(buf[24:]), ne.Uint32(buf[28:])
	if objectid != 0 || t != typ || off != offset || int(size) > len(buf)-searchHeaderSize {
		return nil, false
	}
	return buf[searchHeaderSize : searchHeaderSize+int(size)], true
}

// statusOn: struct btrfs_qgroup_status_item (version, generation, flags,
// ... little-endian) says quotas are on.
func statusOn(item []byte) bool {
	return len(item) >= 24 && binary.LittleEndian.Uint64(item[16:])&qgroupStatusFlagOn != 0
}

// limitHolds: struct btrfs_qgroup_limit_item (flags, max_rfer, ...
// little-endian) limits the referenced bytes to want.
func limitHolds(item []byte, want uint64) bool {
	return len(item) >= 16 && binary.LittleEndian.Uint64(item)&qgroupLimitMaxRfer != 0 && binary.LittleEndian.Uint64(item[8:]) == want
}

// mountPoint is where the filesystem of the file open at fd is mounted,
// for the operator's command line; a placeholder when it cannot be told.
func mountPoint(fd int) string {
	const unknown = "<mount point>"
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		return unknown
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return unknown
	}
	if p, ok := mountInfoPoint(info, stx.Mnt_id); ok {
		return p
	}
	return unknown
}

// mountInfoPoint is the mount point of mount id in a mountinfo table
// (proc_pid_mountinfo(5)), its octal escapes undone.
func mountInfoPoint(info []byte, id uint64) (string, bool) {
	for line := range bytes.Lines(info) {
		f := strings.Fields(string(line))
		if len(f) < 5 || f[0] != strconv.FormatUint(id, 10) {
			continue
		}
		return unescapeOctal(f[4]), true
	}
	return "", false
}

func unescapeOctal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}
