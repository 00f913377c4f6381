package images

import "golang.org/x/sys/unix"

// archiveEvents are the inotify events that say an archive is complete.
const archiveEvents = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO
