package manifest

import "golang.org/x/sys/unix"

// dirMask is what the Source watches for in the manifest directory.
// fsnotify does not expose IN_CLOSE_WRITE, which is what tells a finished
// write from a half-written file, hence raw inotify.
const dirMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB

// entryEvent says what an inotify mask on a directory entry means for the
// scanner.
func entryEvent(mask uint32) (fileEvent, bool) {
	switch {
	case mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO) != 0:
		return evClosed, true
	case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		return evRemove, true
	case mask&unix.IN_CREATE != 0:
		return evCreate, true
	case mask&unix.IN_MODIFY != 0:
		return evModify, true
	case mask&unix.IN_ATTRIB != 0:
		return evAttrib, true
	}
	return 0, false
}
