package images

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// archiveEvents are the inotify events that say an archive is complete.
const archiveEvents = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO

// versionOf is the version of an archive with info fi: its size,
// modification time and inode, so that a file replaced by another (copied
// with its time kept, then renamed in) is a new version, while one renamed
// out and back is not.
func versionOf(fi os.FileInfo) version {
	v := version{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		v.ino = st.Ino
	}
	return v
}
