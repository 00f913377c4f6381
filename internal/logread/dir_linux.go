package logread

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openat2 is unix.Openat2; tests replace it to take the walk that kernels
// before 5.6 get.
var openat2 = unix.Openat2

// openBeneath opens rel below dirfd with flags, following no symlink (a
// symlink anywhere on the way, the last component included, is ELOOP)
// and never leaving dirfd (EXDEV): openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS where the kernel has it, else one O_NOFOLLOW openat
// per component.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	for tries := 0; ; tries++ {
		fd, err := openat2(dirfd, rel, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN) && tries < 10:
			// A rename raced the lookup; the kernel asks to try again.
			continue
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM), errors.Is(err, unix.E2BIG):
			// No openat2: an old kernel, or a seccomp filter that
			// denies it.
			return walkBeneath(dirfd, rel, flags)
		}
		return -1, err
	}
}
