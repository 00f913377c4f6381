package inotify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// selfMask is added to every directory watch: the directory's own end.
	selfMask = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	// The parent only matters for the directory's own entry: created,
	// removed, renamed, swapped (a symlink renamed over it), chmod-ed.
	parentMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// Watch watches opts.Dir until ctx ends, step fails or inotify fails.
//
// handle hears every event, in order. step runs once the watches are set
// up, and again after every wake-up (events read, the time it asked for,
// a poll); it returns when it wants to run next, the zero time for "only
// after the next event". Both run on Watch's goroutine. Events queued
// before step runs have been handed to handle, so step sees all that
// happened up to its call.
func Watch(ctx context.Context, opts Options, handle func(Event), step func(now time.Time) (time.Time, error)) error {
	w, err := newWatcher(opts)
	if err != nil {
		return err
	}
	defer w.close()
	stop := context.AfterFunc(ctx, w.wake)
	defer stop()
	for {
		if err := w.update(handle); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var next time.Time
		if step != nil {
			if next, err = step(time.Now()); err != nil {
				return err
			}
		}
		if err := w.wait(next); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// watcher is an inotify instance on a directory and its parent, plus a
// pipe that wakes a blocked wait. Only Watch's goroutine calls its
// methods, except wake.
type watcher struct {
	fd           int
	wakeR, wakeW int
	dir, parent  string
	base         string
	mask         uint32
	poll         time.Duration
	dirWd        int
	dirID        [2]uint64 // device and inode the directory watch is on
	dirExists    bool      // the last sync found a directory at dir
	parentWd     int
	log          *slog.Logger
	buf          []byte
	warned       map[string]bool

	mu     sync.Mutex // guards closed against a wake racing close
	closed bool
}

func newWatcher(opts Options) (*watcher, error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", opts.Dir, err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify wake pipe: %w", err)
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	return &watcher{
		fd: fd, wakeR: p[0], wakeW: p[1],
		dir: dir, parent: filepath.Dir(dir), base: filepath.Base(dir),
		mask: opts.Mask | selfMask, poll: poll,
		dirWd: -1, parentWd: -1,
		log: log, buf: make([]byte, 64<<10), warned: map[string]bool{},
	}, nil
}

// update hands every queued event to handle and makes the watches match
// the file system, until both are settled: a watch the kernel dropped is
// set up again at once, and a new directory watch is drained of what
// arrived meanwhile.
func (w *watcher) update(handle func(Event)) error {
	for {
		dropped, err := w.drain(handle)
		if err != nil {
			return err
		}
		if !w.sync(handle) && !dropped {
			return nil
		}
	}
}

// sync makes the watches match the file system: the parent is watched when
// it exists, and the directory (the one its path names now, following a
// symlink) when it exists. A directory watch that ends is a DirChanged, a
// new one a DirWatched. It reports whether a watch changed.
func (w *watcher) sync(handle func(Event)) bool {
	if w.parentWd < 0 && w.parent != w.dir {
		wd, err := unix.InotifyAddWatch(w.fd, w.parent, parentMask)
		switch {
		case err == nil:
			w.parentWd = wd
		case !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR):
			w.warnOnce("parent", "cannot watch the parent of a watched directory; polling", "parent", w.parent, "error", err)
		}
	}
	var st unix.Stat_t
	w.dirExists = unix.Stat(w.dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !w.dirExists {
		if w.dirWd < 0 {
			return false
		}
		w.dropDir()
		handle(Event{Op: DirChanged})
		return true
	}
	// Stat before adding: if the directory is swapped in between, the next
	// sync sees a different identity and watches again.
	id := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
	if w.dirWd >= 0 && id == w.dirID {
		return false
	}
	replaced := w.dirWd >= 0
	if replaced {
		w.dropDir()
	}
	wd, err := unix.InotifyAddWatch(w.fd, w.dir, w.mask)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			w.warnOnce("dir", "cannot watch directory; polling", "error", err)
		}
		if replaced {
			handle(Event{Op: DirChanged})
		}
		return replaced
	}
	w.dirWd, w.dirID = wd, id
	handle(Event{Op: DirWatched})
	return true
}

func (w *watcher) dropDir() {
	_, _ = unix.InotifyRmWatch(w.fd, uint32(w.dirWd))
	w.dirWd = -1
}

func (w *watcher) warnOnce(key, msg string, args ...any) {
	if !w.warned[key] {
		w.warned[key] = true
		w.log.Warn(msg, append([]any{"dir", w.dir}, args...)...)
	}
}

// drain reads every queued event without blocking and hands each to
// handle. It reports whether the kernel dropped one of the watches (the
// directory or the parent went).
func (w *watcher) drain(handle func(Event)) (bool, error) {
	dirWd, parentWd := w.dirWd, w.parentWd
	err := w.read(handle)
	return dirWd >= 0 && w.dirWd < 0 || parentWd >= 0 && w.parentWd < 0, err
}

func (w *watcher) read(handle func(Event)) error {
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("read inotify: %w", err)
		case n < unix.SizeofInotifyEvent:
			return nil
		}
		Each(w.buf, n, func(wd int, mask uint32, name string) {
			if ev, ok := w.classify(wd, mask, name); ok {
				handle(ev)
			}
		})
	}
}

// classify turns a raw event into an Event, and forgets a watch the kernel
// dropped (IN_IGNORED).
func (w *watcher) classify(wd int, mask uint32, name string) (Event, bool) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return Event{Op: Overflow}, true
	}
	switch {
	case wd == w.dirWd && wd >= 0:
		if mask&unix.IN_IGNORED != 0 {
			w.dirWd = -1 // the directory is gone
			return Event{Op: DirChanged, Mask: mask}, true
		}
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || name == "" {
			return Event{Op: DirChanged, Mask: mask}, true
		}
		return Event{Op: Entry, Name: name, Mask: mask}, true
	case wd == w.parentWd && wd >= 0:
		if mask&unix.IN_IGNORED != 0 {
			w.parentWd = -1
			return Event{Op: DirChanged, Mask: mask}, true
		}
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || name == w.base {
			return Event{Op: DirChanged, Mask: mask}, true
		}
	}
	return Event{}, false // another entry of the parent, or a stale watch
}

// needsPoll reports whether a change could go unannounced: the parent (or,
// for "/", the directory) is not watched, or the directory exists but its
// watch could not be added.
func (w *watcher) needsPoll() bool {
	if w.parent == w.dir {
		return w.dirWd < 0
	}
	return w.parentWd < 0 || w.dirExists && w.dirWd < 0
}

// wait blocks until events are queued, next (the zero time: no limit)
// or the next poll comes, or wake is called.
func (w *watcher) wait(next time.Time) error {
	ms := -1
	if !next.IsZero() {
		ms = millis(time.Until(next))
	}
	if w.needsPoll() {
		if p := millis(w.poll); ms < 0 || p < ms {
			ms = p
		}
	}
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wakeR), Events: unix.POLLIN}}
	_, err := unix.Poll(fds, ms)
	if errors.Is(err, unix.EINTR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("poll inotify: %w", err)
	}
	if fds[1].Revents != 0 {
		var b [16]byte
		_, _ = unix.Read(w.wakeR, b[:])
	}
	return nil
}

// millis rounds d up to whole milliseconds, within what poll(2) takes.
func millis(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(min((d+time.Millisecond-1)/time.Millisecond, math.MaxInt32))
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
