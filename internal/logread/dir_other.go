//go:build !linux

package logread

// openBeneath opens rel below dirfd with flags, one O_NOFOLLOW openat per
// component: a symlink on the way fails with ELOOP.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	return walkBeneath(dirfd, rel, flags)
}
