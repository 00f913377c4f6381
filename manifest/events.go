package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// fileEvent is what an inotify event says about one directory entry.
type fileEvent int

const (
	evCreate fileEvent = iota // IN_CREATE
	evModify                  // IN_MODIFY
	evClosed                  // IN_CLOSE_WRITE or IN_MOVED_TO: the content is complete
	evRemove                  // IN_DELETE or IN_MOVED_FROM
	evAttrib                  // IN_ATTRIB
)

// fileEvent records an event on the directory entry name and reports
// whether a rescan is due.
func (s *scanner) fileEvent(name string, ev fileEvent) bool {
	if strings.HasPrefix(name, ".") {
		// Never a manifest, but an atomic writer swaps symlink targets
		// through dot-entries (Kubernetes' ..data): the symlinked manifests
		// may have new content.
		if ev == evModify {
			return false
		}
		s.dotChanged = true
		return true
	}
	if skipReason(name) != "" {
		return ev != evModify && ev != evAttrib // rescan only to log it once
	}
	path := filepath.Join(s.dir, name)
	st := s.state[path]
	if st == nil {
		if ev == evRemove {
			return true
		}
		st = &fileState{}
		s.state[path] = st
	}
	switch ev {
	case evCreate:
		st.needRead, st.created, st.modified, st.pending = false, false, false, nil
		fi, err := os.Lstat(path)
		switch {
		case err != nil:
			// Gone already; the scan finds out.
		case fi.Mode()&fs.ModeSymlink != 0:
			st.needRead = true // a symlink is complete when it is created
		case fi.Mode().IsRegular():
			if _, nlink, ok := ownerOf(fi); ok && nlink > 1 {
				st.needRead = true // a hard link to a finished file
			} else {
				st.created = true // open(O_CREAT): the writer has not finished
			}
		}
		return true
	case evModify:
		st.modified = true
		return false // nothing can be read until the writer closes it
	case evClosed:
		st.modified, st.created, st.needRead, st.pending = false, false, true, nil
		return true
	case evRemove:
		st.modified, st.created, st.needRead, st.pending = false, false, false, nil
		return true
	case evAttrib:
		st.attrib = true
		return true // permissions may have changed
	}
	return false
}

// resetEvents forgets what events said: after an inotify overflow, or when
// the directory was replaced, events may be missing, so the next scan reads
// every file that is not being written (as at start).
func (s *scanner) resetEvents() {
	for _, st := range s.state {
		st.modified, st.created, st.needRead, st.attrib, st.pending = false, false, false, false, nil
	}
	s.fullRead = true
}
