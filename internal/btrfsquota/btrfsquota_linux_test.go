package btrfsquota

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/podvisor/podvisor/test/loopfs"
	"golang.org/x/sys/unix"
)

// The structs are laid out as linux/btrfs.h's, and each ioctl number
// encodes its struct's size: a field wrong in size or order fails here,
// not in the kernel.
func TestLayout(t *testing.T) {
	const (
		w  = 1 // _IOC_WRITE
		r  = 2 // _IOC_READ
		wr = w | r
	)
	ioc := func(dir, nr, size uintptr) uintptr { return dir<<30 | size<<16 | 0x94<<8 | nr }
	for _, c := range []struct {
		name       string
		size, want uintptr
	}{
		{"btrfs_ioctl_vol_args", unsafe.Sizeof(volArgs{}), 4096},
		{"btrfs_ioctl_vol_args_v2", unsafe.Sizeof(volArgsV2{}), 4096},
		{"btrfs_ioctl_vol_args_v2.name offset", unsafe.Offsetof(volArgsV2{}.Name), 56},
		{"btrfs_qgroup_limit", unsafe.Sizeof(qgroupLimit{}), 40},
		{"btrfs_ioctl_qgroup_limit_args", unsafe.Sizeof(qgroupLimitArgs{}), 48},
		{"btrfs_ioctl_qgroup_limit_args.lim offset", unsafe.Offsetof(qgroupLimitArgs{}.Lim), 8},
		{"btrfs_ioctl_ino_lookup_args", unsafe.Sizeof(inoLookupArgs{}), 4096},
		{"btrfs_ioctl_search_key", unsafe.Sizeof(searchKey{}), 104},
		{"btrfs_ioctl_search_key.min_type offset", unsafe.Offsetof(searchKey{}.MinType), 56},
		{"btrfs_ioctl_search_key.nr_items offset", unsafe.Offsetof(searchKey{}.NrItems), 64},
		{"btrfs_ioctl_search_args", unsafe.Sizeof(searchArgs{}), 4096},
		{"BTRFS_IOC_SUBVOL_CREATE", iocSubvolCreate, ioc(w, 14, unsafe.Sizeof(volArgs{}))},
		{"BTRFS_IOC_SNAP_DESTROY", iocSnapDestroy, ioc(w, 15, unsafe.Sizeof(volArgs{}))},
		{"BTRFS_IOC_TREE_SEARCH", iocTreeSearch, ioc(wr, 17, unsafe.Sizeof(searchArgs{}))},
		{"BTRFS_IOC_INO_LOOKUP", iocInoLookup, ioc(wr, 18, unsafe.Sizeof(inoLookupArgs{}))},
		{"BTRFS_IOC_QGROUP_LIMIT", iocQgroupLimit, ioc(r, 43, unsafe.Sizeof(qgroupLimitArgs{}))},
		{"BTRFS_IOC_SNAP_DESTROY_V2", iocSnapDestroyV2, ioc(w, 63, unsafe.Sizeof(volArgsV2{}))},
	} {
		if c.size != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.size, c.want)
		}
	}
}

// The quota tree's items as a tree search returns them: the status's ON
// flag, a limit on the referenced bytes, and anything else refused.
func TestItems(t *testing.T) {
	le := binary.LittleEndian
	result := func(objectid, offset uint64, typ uint32, item []byte) []byte {
		b := make([]byte, searchHeaderSize, searchBufSize)
		binary.NativeEndian.PutUint64(b[8:], objectid)
		binary.NativeEndian.PutUint64(b[16:], offset)
		binary.NativeEndian.PutUint32(b[24:], typ)
		binary.NativeEndian.PutUint32(b[28:], uint32(len(item)))
		return append(b, item...)
	}
	status := func(flags uint64) []byte {
		b := make([]byte, 40) // version, generation, flags, rescan, enable_gen
		le.PutUint64(b[16:], flags)
		return b
	}
	limit := func(flags, maxRfer uint64) []byte {
		b := make([]byte, 40) // flags, max_rfer, max_excl, rsv_rfer, rsv_excl
		le.PutUint64(b, flags)
		le.PutUint64(b[8:], maxRfer)
		return b
	}
	for _, c := range []struct {
		name   string
		n      uint32
		buf    []byte
		typ    uint32
		offset uint64
		on     bool // statusOn / limitHolds(8 MiB)
	}{
		{"quotas on", 1, result(0, 0, qgroupStatusKey, status(qgroupStatusFlagOn)), qgroupStatusKey, 0, true},
		{"quotas on, rescanning, inconsistent", 1, result(0, 0, qgroupStatusKey, status(qgroupStatusFlagOn|2|4)), qgroupStatusKey, 0, true},
		{"quotas off", 1, result(0, 0, qgroupStatusKey, status(0)), qgroupStatusKey, 0, false},
		{"no item", 0, result(0, 0, qgroupStatusKey, status(qgroupStatusFlagOn)), qgroupStatusKey, 0, false},
		{"another key", 1, result(0, 0, qgroupLimitKey, status(qgroupStatusFlagOn)), qgroupStatusKey, 0, false},
		{"a short item", 1, result(0, 0, qgroupStatusKey, status(qgroupStatusFlagOn)[:16]), qgroupStatusKey, 0, false},
		{"a length past the buffer", 1, result(0, 0, qgroupStatusKey, status(qgroupStatusFlagOn))[:50], qgroupStatusKey, 0, false},
		{"the limit", 1, result(0, 257, qgroupLimitKey, limit(qgroupLimitMaxRfer, 8<<20)), qgroupLimitKey, 257, true},
		{"the limit, more flags", 1, result(0, 257, qgroupLimitKey, limit(qgroupLimitMaxRfer|2, 8<<20)), qgroupLimitKey, 257, true},
		{"another limit", 1, result(0, 257, qgroupLimitKey, limit(qgroupLimitMaxRfer, 4<<20)), qgroupLimitKey, 257, false},
		{"a limit not in force", 1, result(0, 257, qgroupLimitKey, limit(0, 8<<20)), qgroupLimitKey, 257, false},
		{"another qgroup's limit", 1, result(0, 258, qgroupLimitKey, limit(qgroupLimitMaxRfer, 8<<20)), qgroupLimitKey, 257, false},
		{"a higher level's limit", 1, result(1, 257, qgroupLimitKey, limit(qgroupLimitMaxRfer, 8<<20)), qgroupLimitKey, 257, false},
	} {
		item, found := firstItem(c.n, c.buf, c.typ, c.offset)
		var on bool
		if found && c.typ == qgroupStatusKey {
			on = statusOn(item)
		} else if found {
			on = limitHolds(item, 8<<20)
		}
		if on != c.on {
			t.Errorf("%s: %t (found %t), want %t", c.name, on, found, c.on)
		}
	}
}

func TestMountInfoPoint(t *testing.T) {
	info := []byte("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"97 22 7:0 / /tmp/a\\040b rw,relatime shared:50 - btrfs /dev/loop0 rw,space_cache=v2,subvolid=5,subvol=/\n")
	if p, ok := mountInfoPoint(info, 97); !ok || p != "/tmp/a b" {
		t.Errorf("mount 97: %q %t, want \"/tmp/a b\"", p, ok)
	}
	if p, ok := mountInfoPoint(info, 9); ok {
		t.Errorf("mount 9: %q, want none", p)
	}
}

// btrfsFS is a loop-mounted btrfs of its own, quotas not enabled,
// unmounted and detached when the test ends.
func btrfsFS(t *testing.T) string {
	t.Helper()
	return loopfs.FS(t, "btrfs", 128<<20)
}

// On a real btrfs: a subvolume is made, limited only once the operator
// enabled quotas (said before with the command that does), its limit
// enforced with EDQUOT, set once; a plain directory cannot be limited; the
// subvolume is destroyed with what is in it.
func TestSubvolumeLimit(t *testing.T) {
	mnt := btrfsFS(t)
	root, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	if err := Check(root); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "btrfs quota enable "+mnt+")") {
		t.Errorf("Check before quotas are enabled: %v", err)
	}
	if err := Create(root, "claim"); err != nil {
		t.Fatal(err)
	}
	open := func(name string) int {
		fd, err := unix.Openat(root, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	claim := open("claim")
	if ok, err := IsSubvolume(claim); !ok || err != nil {
		t.Fatalf("IsSubvolume(claim) = %t, %v", ok, err)
	}
	if err := Set(claim, 8<<20); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "btrfs quota enable "+mnt+")") {
		t.Errorf("Set before quotas are enabled: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "btrfs", "quota", "enable", mnt).CombinedOutput(); err != nil {
		t.Fatalf("btrfs quota enable: %v\n%s", err, out)
	}
	if err := Check(root); err != nil {
		t.Errorf("Check after quotas were enabled: %v", err)
	}
	if err := Set(claim, 8<<20); err != nil {
		t.Fatal(err)
	}
	if err := Set(claim, 8<<20); err != nil {
		t.Fatal(err)
	}
	write := func(name string, size int) error {
		f, err := os.Create(filepath.Join(mnt, "claim", name))
		if err != nil {
			return err
		}
		chunk := make([]byte, 1<<20)
		for n := 0; n < size; n += len(chunk) {
			if _, err := f.Write(chunk); err != nil {
				f.Close()
				return err
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
		}
		return f.Close()
	}
	if err := write("small", 4<<20); err != nil {
		t.Errorf("writing 4 MiB under an 8 MiB limit: %v", err)
	}
	if err := write("big", 32<<20); !errors.Is(err, unix.EDQUOT) {
		t.Errorf("writing 32 MiB under an 8 MiB limit: %v, want EDQUOT", err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Set(open("plain"), 8<<20); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "not a subvolume") {
		t.Errorf("Set on a plain directory: %v", err)
	}
	if err := Destroy(root, "claim"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(mnt, "claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the subvolume after Destroy: %v", err)
	}
}

// The subvolumes nested in one, at any depth and in any directory (a
// read-only snapshot among them), are listed each after the one that
// holds it; Destroy deletes them, deepest first, then it.
func TestNested(t *testing.T) {
	mnt := btrfsFS(t)
	root, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	claim := filepath.Join(mnt, "claim")
	run("btrfs", "subvolume", "create", claim)
	run("btrfs", "subvolume", "create", filepath.Join(mnt, "beside"))
	if err := os.MkdirAll(filepath.Join(claim, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("btrfs", "subvolume", "create", filepath.Join(claim, "a"))
	run("btrfs", "subvolume", "create", filepath.Join(claim, "a", "b"))
	run("btrfs", "subvolume", "create", filepath.Join(claim, "d", "e", "c"))
	if err := os.WriteFile(filepath.Join(claim, "a", "b", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("btrfs", "subvolume", "snapshot", "-r", filepath.Join(claim, "a", "b"), filepath.Join(claim, "d", "snap"))
	fd, err := unix.Open(claim, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	got, err := Nested(fd)
	if err != nil {
		t.Fatal(err)
	}
	// Each level in the order of the subvolumes' IDs.
	if want := []string{"a", "d/e/c", "d/snap", "a/b"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Nested: %q, want %q", got, want)
	}
	if err := Destroy(root, "claim"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(claim); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the subvolume after Destroy: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(mnt, "beside")); err != nil {
		t.Errorf("the subvolume beside it after Destroy: %v", err)
	}
}
