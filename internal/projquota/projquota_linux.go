package projquota

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by Set's errors about a filesystem that cannot
// enforce a project quota.
var ErrUnsupported = errors.New("project quotas are not available")

// The kernel's interface (linux/fs.h, linux/quota.h), which x/sys/unix
// does not define.
const (
	fsIocFsgetxattr    = 0x801c581f // _IOR('X', 31, struct fsxattr)
	fsIocFssetxattr    = 0x401c5820 // _IOW('X', 32, struct fsxattr)
	fsXflagProjinherit = 0x00000200
	prjQuota           = 2
	qGetQuota          = 0x800007
	qSetQuota          = 0x800008
	qifBLimits         = 1
	// qifBlockSize is the unit of if_dqblk's block limits.
	qifBlockSize = 1024
)

// fsxattr is struct fsxattr.
type fsxattr struct {
	Xflags     uint32
	Extsize    uint32
	Nextents   uint32
	Projid     uint32
	Cowextsize uint32
	Pad        [8]byte
}

// dqblk is struct if_dqblk.
type dqblk struct {
	BHardLimit uint64
	BSoftLimit uint64
	CurSpace   uint64
	IHardLimit uint64
	ISoftLimit uint64
	CurInodes  uint64
	BTime      uint64
	ITime      uint64
	Valid      uint32
	_          uint32
}

// Set gives the directory open at fd project ID id (inherited by what is
// created below it) and limits that project to limit bytes (rounded up to
// a KiB), on the directory's filesystem.
func Set(fd int, id uint32, limit int64) error {
	if id == 0 {
		return errors.New("project ID 0 is the default project, which has no limit of its own")
	}
	var x fsxattr
	if err := ioctl(fd, fsIocFsgetxattr, unsafe.Pointer(&x)); err != nil {
		return classify("get project ID", err)
	}
	if x.Projid != id || x.Xflags&fsXflagProjinherit == 0 {
		x.Projid = id
		x.Xflags |= fsXflagProjinherit
		if err := ioctl(fd, fsIocFssetxattr, unsafe.Pointer(&x)); err != nil {
			return classify("set project ID", err)
		}
	}
	blocks := uint64((limit + qifBlockSize - 1) / qifBlockSize)
	var q dqblk
	if err := quotactl(fd, qGetQuota, id, &q); err != nil {
		return classify("get project quota", err)
	}
	if q.Valid&qifBLimits != 0 && q.BHardLimit == blocks && q.BSoftLimit == 0 {
		return nil
	}
	q = dqblk{BHardLimit: blocks, Valid: qifBLimits}
	if err := quotactl(fd, qSetQuota, id, &q); err != nil {
		return classify("set project quota", err)
	}
	return nil
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// quotactl is quotactl_fd(2) (Linux 5.14) on the project quota type: it
// takes any file of the filesystem, where quotactl(2) needs its block
// device.
func quotactl(fd int, cmd int, id uint32, q *dqblk) error {
	qcmd := cmd<<8 | prjQuota
	if _, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, uintptr(fd), uintptr(qcmd), uintptr(id), uintptr(unsafe.Pointer(q)), 0, 0); e != 0 {
		return e
	}
	return nil
}

// classify wraps errors that mean the filesystem has no project quotas in
// ErrUnsupported, saying what is missing.
func classify(what string, err error) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL) && what == "set project ID":
		return fmt.Errorf("%w: %s: %v (the filesystem has no project IDs: xfs, or ext4 made with -O project)", ErrUnsupported, what, err)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w: %s: %v (project quotas are not enabled: mount the filesystem with prjquota)", ErrUnsupported, what, err)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w: %s: %v (the filesystem has no quotas, or the kernel no quotactl_fd: Linux 5.14 or later)", ErrUnsupported, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Check reports, changing nothing, whether the filesystem of the directory
// open at fd enforces project quotas: nil, or an error wrapping
// ErrUnsupported that says why not.
func Check(fd int) error {
	var q dqblk
	if err := quotactl(fd, qGetQuota, 0, &q); err != nil {
		return classify("get project quota", err)
	}
	return nil
}
