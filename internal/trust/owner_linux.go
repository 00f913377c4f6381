//go:build linux

package trust

import (
	"io/fs"
	"syscall"
)

// ownerOf returns the uid that owns the file.
func ownerOf(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
