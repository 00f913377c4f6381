package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/inotify"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// dropCheckPeriod is how often the log drivers' drop counts are read when
// inotify cannot report them (a shorter relist period shortens it too), so
// that a full log filesystem is reported while it is full, not only at the
// container's next exit.
const dropCheckPeriod = 2 * time.Second

// dropsSeen is a container's drop counts as last reported, of the run's
// log at path.
type dropsSeen struct {
	path  string
	drops crilog.Drops
}

// newDropEpisode reports whether the drops d of the log at path are news
// since seen: a run's first drops, or an episode after the ones reported
// (a driver that does not count episodes: any more drops).
func newDropEpisode(seen dropsSeen, path string, d crilog.Drops) bool {
	if d.Lines == 0 {
		return false
	}
	if seen.path != path {
		return true
	}
	if d.Gaps > 0 {
		return d.Gaps > seen.drops.Gaps
	}
	return d.Lines > seen.drops.Lines
}

// watchDrops tells a pod's worker (dropsMsg) when a log driver of its
// containers rewrote its status file: the worker's reportLogDrops then
// reads it and posts LogDropped once per episode. The drivers write a
// status file when a log opens and when it drops output, never while
// output flows, so at rest nothing wakes. inotify reports the writes
// (<log-dir>/<pod>/<container>/<n>.log.dropped, closed after writing);
// where it cannot, the status files are read every dropCheckPeriod.
func (s *Supervisor) watchDrops(ctx context.Context) {
	err := s.notifyDrops(ctx)
	if ctx.Err() != nil {
		return
	}
	period := dropCheckPeriod
	if p := s.opts.RelistPeriod; p > 0 && p < period {
		period = p
	}
	s.log.Warn("log drops: cannot watch the log dir; reading the drivers' status files instead", "dir", s.layout.LogDir, "period", period, "err", err)
	t := s.clock.NewTicker(period)
	defer t.Stop()
	last := map[string]int64{}
	for {
		s.checkDrops(last)
		s.log.Debug("log drops checked", "dropping", len(last))
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// checkDrops is one pass of the polling fallback of watchDrops; last holds
// each status file's lines as seen before.
func (s *Supervisor) checkDrops(last map[string]int64) {
	files, _ := filepath.Glob(filepath.Join(s.layout.LogDir, "*", "*", "*"+crilog.DropsPath(".log")))
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		seen[f] = true
		d, err := crilog.ReadDrops(strings.TrimSuffix(f, crilog.DropsPath("")))
		if err != nil || d.Lines <= last[f] {
			continue
		}
		last[f] = d.Lines
		s.dropsChanged(filepath.Dir(filepath.Dir(f)))
	}
	for f := range last {
		if !seen[f] {
			delete(last, f)
		}
	}
}

// dropsChanged tells the worker of the pod whose log directory is podDir
// (<log-dir>/<namespace>_<name>_<uid>) to read its drops.
func (s *Supervisor) dropsChanged(podDir string) {
	base := filepath.Base(podDir)
	uid := types.UID(base[strings.LastIndexByte(base, '_')+1:])
	s.mu.Lock()
	if w := s.workers[uid]; w != nil {
		w.inbox.send(dropsMsg{})
	}
	s.mu.Unlock()
}

// dropsAll tells every worker to read its drops (events were lost).
func (s *Supervisor) dropsAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		w.inbox.send(dropsMsg{})
	}
}

// Depths of the watched log directories.
const (
	logRoot = iota // <log-dir>: pod directories appear
	logPod         // <log-dir>/<pod>: container directories appear
	logCtr         // <log-dir>/<pod>/<container>: status files are written
)

// logMasks are what each depth is watched for. A log file is written
// without a close while its driver runs, so IN_CLOSE_WRITE stays quiet
// while output flows.
var logMasks = [...]uint32{
	logRoot: unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR,
	logPod:  unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR,
	logCtr:  unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_ONLYDIR,
}

// errLogDirGone ends notifyDrops when the log dir itself went away.
var errLogDirGone = errors.New("log dir removed")

// notifyDrops is watchDrops on inotify: it returns when ctx ends or when
// it cannot watch (an error saying why).
func (s *Supervisor) notifyDrops(ctx context.Context) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	// The runtime's poller reads a non-blocking inotify fd; closing the
	// file ends a read in progress.
	f := os.NewFile(uintptr(fd), "inotify")
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer func() {
		if stop() {
			f.Close()
		}
	}()
	w := dropWatch{fd: fd, dirs: map[int]watchedDir{}}
	if err := w.add(s.layout.LogDir, logRoot, nil); err != nil {
		return err
	}
	buf := make([]byte, 16<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read inotify: %w", err)
		}
		var errs []error
		inotify.Each(buf, n, func(wd int, mask uint32, name string) {
			if mask&unix.IN_Q_OVERFLOW != 0 {
				// Lost events: watch what appeared meanwhile, and
				// have every worker look.
				errs = append(errs, w.add(s.layout.LogDir, logRoot, nil))
				s.dropsAll()
				return
			}
			d, ok := w.dirs[wd]
			if !ok {
				return
			}
			if mask&unix.IN_IGNORED != 0 {
				delete(w.dirs, wd)
				if d.depth == logRoot {
					errs = append(errs, errLogDirGone)
				}
				return
			}
			switch p := filepath.Join(d.path, name); {
			case d.depth == logCtr && strings.HasSuffix(name, crilog.DropsPath("")):
				s.dropsChanged(filepath.Dir(d.path))
			case d.depth < logCtr && mask&unix.IN_ISDIR != 0:
				// A new directory: what it holds by now was never
				// reported.
				errs = append(errs, w.add(p, d.depth+1, s.dropsChanged))
			}
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
}

// dropWatch is the set of log directories watched.
type dropWatch struct {
	fd   int
	dirs map[int]watchedDir // by watch descriptor
}

type watchedDir struct {
	path  string
	depth int
}

// add watches dir, at depth, and the directories under it. found, when
// set, hears of each pod directory under which a status file already
// exists. A directory gone meanwhile is no error; one that cannot be
// watched is.
func (w *dropWatch) add(dir string, depth int, found func(podDir string)) error {
	wd, err := unix.InotifyAddWatch(w.fd, dir, logMasks[depth])
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		if depth == logRoot {
			return fmt.Errorf("watch %s: %w", dir, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	w.dirs[wd] = watchedDir{path: dir, depth: depth}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // gone meanwhile: its IN_IGNORED follows
	}
	for _, e := range ents {
		switch {
		case depth < logCtr && e.IsDir():
			if err := w.add(filepath.Join(dir, e.Name()), depth+1, found); err != nil {
				return err
			}
		case depth == logCtr && found != nil && strings.HasSuffix(e.Name(), crilog.DropsPath("")):
			found(filepath.Dir(dir))
			found = nil // once per container directory is enough
		}
	}
	return nil
}
