package manifest

import (
	"errors"
	"github.com/podvisor/podvisor/internal/inotify"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Watch masks. fsnotify does not expose IN_CLOSE_WRITE, which is what tells
// a finished write from a half-written file, hence raw inotify.
const (
	dirMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
		unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	// The parent only matters for the directory's own entry: created,
	// removed, renamed, swapped (a symlink renamed over it), chmod-ed.
	parentMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// watcher is an inotify instance on the manifest directory and its parent,
// plus a pipe that wakes a blocked wait. Only the Source's goroutine calls
// its methods, except wake.
type watcher struct {
	fd           int
	wakeR, wakeW int
	dir, parent  string
	base         string
	dirWd        int
	dirID        [2]uint64 // device and inode the directory watch is on
	parentWd     int
	log          *slog.Logger
	buf          []byte
	warned       map[string]bool

	mu     sync.Mutex // guards closed against a wake racing close
	closed bool
}

func newWatcher(dir, parent string, log *slog.Logger) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &watcher{
		fd: fd, wakeR: p[0], wakeW: p[1],
		dir: dir, parent: parent, base: filepath.Base(dir),
		dirWd: -1, parentWd: -1,
		log: log, buf: make([]byte, 64<<10), warned: map[string]bool{},
	}, nil
}

// sync makes the watches match the file system: the parent is watched when
// it exists, and the directory (the one its path names now, following a
// symlink) when it exists. It reports whether the directory watch is new,
// that is the directory appeared or was replaced: its files must then be
// read in full, since no event announced them.
func (w *watcher) sync() bool {
	if w.parentWd < 0 && w.parent != w.dir {
		wd, err := unix.InotifyAddWatch(w.fd, w.parent, parentMask)
		switch {
		case err == nil:
			w.parentWd = wd
		case !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR):
			w.warnOnce("parent", "cannot watch parent of manifest directory; relying on relist", "parent", w.parent, "error", err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(w.dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if w.dirWd >= 0 {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(w.dirWd))
			w.dirWd = -1
		}
		return false
	}
	// Stat before adding: if the directory is swapped in between, the next
	// sync sees a different identity and watches again.
	id := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
	if w.dirWd >= 0 && id == w.dirID {
		return false
	}
	if w.dirWd >= 0 {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(w.dirWd))
		w.dirWd = -1
	}
	wd, err := unix.InotifyAddWatch(w.fd, w.dir, dirMask)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			w.warnOnce("dir", "cannot watch manifest directory; relying on relist", "error", err)
		}
		return false
	}
	w.dirWd, w.dirID = wd, id
	return true
}

func (w *watcher) warnOnce(key, msg string, args ...any) {
	if !w.warned[key] {
		w.warned[key] = true
		w.log.Warn(msg, args...)
	}
}

// drain reads every queued event without blocking.
func (w *watcher) drain(handle func(watchEvent)) error {
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n < unix.SizeofInotifyEvent:
			return nil
		}
		inotify.Each(w.buf, n, func(wd int, mask uint32, name string) {
			if ev, ok := w.translate(wd, mask, name); ok {
				handle(ev)
			}
		})
	}
}

// translate turns a raw event into what the Source acts on.
func (w *watcher) translate(wd int, mask uint32, name string) (watchEvent, bool) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return watchEvent{overflow: true}, true
	}
	switch {
	case wd == w.dirWd && wd >= 0:
		if mask&unix.IN_IGNORED != 0 {
			w.dirWd = -1 // the kernel dropped the watch: the directory is gone
			return watchEvent{dir: true}, true
		}
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || name == "" {
			return watchEvent{dir: true}, true
		}
		ev := watchEvent{name: name}
		switch {
		case mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO) != 0:
			ev.kind = evClosed
		case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
			ev.kind = evRemove
		case mask&unix.IN_CREATE != 0:
			ev.kind = evCreate
		case mask&unix.IN_MODIFY != 0:
			ev.kind = evModify
		case mask&unix.IN_ATTRIB != 0:
			ev.kind = evAttrib
		default:
			return watchEvent{}, false
		}
		return ev, true
	case wd == w.parentWd && wd >= 0:
		if mask&unix.IN_IGNORED != 0 {
			w.parentWd = -1
			return watchEvent{dir: true}, true
		}
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || name == w.base {
			return watchEvent{dir: true}, true
		}
	}
	return watchEvent{}, false // another entry of the parent, or a stale watch
}

// wait blocks until events are queued, the timeout passes, or wake is
// called. It reports whether events are queued.
func (w *watcher) wait(timeout time.Duration) (bool, error) {
	ms := 0
	if timeout > 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wakeR), Events: unix.POLLIN}}
	_, err := unix.Poll(fds, ms)
	if errors.Is(err, unix.EINTR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fds[1].Revents != 0 {
		var b [16]byte
		_, _ = unix.Read(w.wakeR, b[:])
	}
	return fds[0].Revents&unix.POLLIN != 0, nil
}

// wake makes a blocked wait return; it may be called from any goroutine.
func (w *watcher) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		_, _ = unix.Write(w.wakeW, []byte{0})
	}
}

func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	unix.Close(w.fd)
	unix.Close(w.wakeR)
	unix.Close(w.wakeW)
}
