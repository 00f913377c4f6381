package api

import (
	"os"
	"syscall"
	"time"
)

// inodeStamp is fi's inode number and change time.
func inodeStamp(fi os.FileInfo) (uint64, time.Time) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, time.Time{}
	}
	return st.Ino, time.Unix(st.Ctim.Unix())
}
