package logread

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestRefusedWithoutOpenat2: on a kernel without openat2 the walk of one
// O_NOFOLLOW openat per component refuses the same.
func TestRefusedWithoutOpenat2(t *testing.T) {
	defer func(f func(int, string, *unix.OpenHow) (int, error)) { openat2 = f }(openat2)
	openat2 = func(int, string, *unix.OpenHow) (int, error) { return -1, unix.ENOSYS }
	checkRefusals(t)
}
