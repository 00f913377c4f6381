package residency

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The userfaultfd ABI (linux/userfaultfd.h) as far as noFaultAround
// needs it; golang.org/x/sys/unix does not carry it.
const (
	uffdAPI            = 0xaa
	uffdUserModeOnly   = 1          // UFFD_USER_MODE_ONLY: no kernel-mode faults (what unprivileged use may ask for)
	uffdioAPI          = 0xc018aa3f // _IOWR(UFFDIO, _UFFDIO_API, struct uffdio_api)
	uffdioRegister     = 0xc020aa00 // _IOWR(UFFDIO, _UFFDIO_REGISTER, struct uffdio_register)
	uffdFeatureWPAsync = 1 << 15    // UFFD_FEATURE_WP_ASYNC, Linux 6.7
	uffdRegisterModeWP = 1 << 1     // UFFDIO_REGISTER_MODE_WP
)

type uffdioAPIArg struct{ API, Features, Ioctls uint64 }

type uffdioRegisterArg struct{ Start, Len, Mode, Ioctls uint64 }

// faultAround holds the userfaultfd that keeps fault-around off for the
// executable's read-only mappings: closing it would turn it back on, so
// it stays open for the process's life.
var faultAround struct {
	sync.Mutex
	done bool
	fd   int
	err  error
}

// noFaultAround turns off fault-around for maps, once per process: a
// later page fault there maps the one page touched, not the up to 15
// neighbours the page cache holds (see the package doc for why). Linux
// has no advice for that; it skips fault-around in a mapping registered
// with a userfaultfd for write-protection (mm/memory.c,
// should_fault_around), and since Linux 6.7 (UFFD_FEATURE_WP_ASYNC) a
// private file mapping may be registered so. With the asynchronous
// feature the kernel resolves any write-protect fault itself, and
// nothing here write-protects a page, so the registration changes
// nothing else: no fault waits on this process, the mapping reads as
// before. The error says why fault-around stays on (an older kernel, no
// userfaultfd in the kernel or allowed by seccomp).
func noFaultAround(maps []Mapping) error {
	faultAround.Lock()
	defer faultAround.Unlock()
	if !faultAround.done {
		faultAround.fd, faultAround.err = registerNoFaultAround(maps)
		faultAround.done = true
	}
	return faultAround.err
}

// registerNoFaultAround opens a userfaultfd and registers maps with it
// for asynchronous write-protection; it returns the descriptor, which
// must stay open, or closes it and says why not.
func registerNoFaultAround(maps []Mapping) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK|uffdUserModeOnly, 0, 0)
	if e != 0 {
		return 0, fmt.Errorf("userfaultfd: %w", e)
	}
	fd := int(r)
	api := uffdioAPIArg{API: uffdAPI, Features: uffdFeatureWPAsync}
	if err := ioctlPtr(fd, uffdioAPI, unsafe.Pointer(&api)); err != nil {
		unix.Close(fd)
		if err == unix.EINVAL {
			return 0, fmt.Errorf("userfaultfd: no asynchronous write-protection (UFFD_FEATURE_WP_ASYNC, Linux 6.7): %w", err)
		}
		return 0, fmt.Errorf("userfaultfd API handshake: %w", err)
	}
	for _, m := range maps {
		reg := uffdioRegisterArg{Start: m.Start, Len: m.End - m.Start, Mode: uffdRegisterModeWP}
		if err := ioctlPtr(fd, uffdioRegister, unsafe.Pointer(&reg)); err != nil {
			unix.Close(fd) // unregisters what was registered
			return 0, fmt.Errorf("userfaultfd register %x-%x (%s): %w", m.Start, m.End, m.Perms, err)
		}
	}
	return fd, nil
}

func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}
