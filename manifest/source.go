package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

const (
	// DefaultRelistPeriod is Source.RelistPeriod's default; kubelet relists
	// its static pod directory every 20s too.
	DefaultRelistPeriod = 20 * time.Second
	// DefaultDebounce is Source.Debounce's default: long enough to coalesce
	// an editor's write-rename-chmod burst, short enough not to be noticed.
	DefaultDebounce = 100 * time.Millisecond
)

// Source watches dir and sends a full Snapshot on out after every change and
// every relist that finds one. The first scan is always sent, even when empty.
//
// Events (fsnotify on the directory, and on its parent so the directory may
// appear and disappear) schedule a rescan after Debounce, coalescing bursts
// such as an editor's save; a relist every RelistPeriod repairs anything an
// event missed. A file that turns invalid keeps its last good pods, marked
// with Pod.Err, until it is fixed or removed.
type Source struct {
	// RelistPeriod is how often the directory is re-read without any event.
	// Zero means DefaultRelistPeriod. Set it before Run.
	RelistPeriod time.Duration
	// Debounce is the delay between an event and the rescan it causes; events
	// in between join the same rescan. Zero means DefaultDebounce.
	Debounce time.Duration

	dir      string
	nodeName string
	log      *slog.Logger
}

// NewSource returns a Source for the manifests in dir, naming pods for
// nodeName. log may be nil.
func NewSource(dir, nodeName string, log *slog.Logger) *Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{
		RelistPeriod: DefaultRelistPeriod,
		Debounce:     DefaultDebounce,
		dir:          dir,
		nodeName:     nodeName,
		log:          log.With("dir", dir),
	}
}

// Run watches until ctx is done and then returns ctx.Err(). It returns
// early only when the watcher cannot be created or fails for good. Run must
// not be called twice at once on one Source; out is never closed.
func (s *Source) Run(ctx context.Context, out chan<- Snapshot) error {
	relistPeriod := cmpOr(s.RelistPeriod, DefaultRelistPeriod)
	debounce := cmpOr(s.Debounce, DefaultDebounce)
	sc := newScanner(s.dir, s.nodeName, s.log)
	dir := sc.dir

	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch manifest directory %s: %w", dir, err)
	}
	defer w.Close()

	emit := func() error {
		first := sc.prev == nil
		snap, changed := sc.scan()
		if !changed {
			return nil
		}
		s.log.Debug("manifest snapshot", "pods", len(snap.Pods), "errors", len(snap.Errors), "first", first)
		select {
		case out <- snap:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	s.ensureWatches(w, dir)
	if err := emit(); err != nil {
		return err
	}

	relist := time.NewTicker(relistPeriod)
	defer relist.Stop()
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	pending := false
	schedule := func() {
		if !pending {
			pending = true
			timer.Reset(debounce)
		}
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.Events:
			if !ok {
				return fmt.Errorf("watch manifest directory %s: watcher closed", dir)
			}
			if s.relevant(w, dir, ev) {
				schedule()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return fmt.Errorf("watch manifest directory %s: watcher closed", dir)
			}
			// An overflow loses events; a rescan finds what they said.
			s.log.Warn("manifest watch error; rescanning", "error", err)
			schedule()
		case <-timer.C:
			pending = false
			s.ensureWatches(w, dir)
			if err := emit(); err != nil {
				return err
			}
		case <-relist.C:
			s.ensureWatches(w, dir)
			if err := emit(); err != nil {
				return err
			}
		}
	}
}

// relevant reports whether an event may change the desired set: anything in
// dir (even dotfiles, since an atomic writer may swap a symlink target
// through one), and dir itself appearing or going away.
func (s *Source) relevant(w *fsnotify.Watcher, dir string, ev fsnotify.Event) bool {
	if ev.Name == dir {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			// The watch follows the inode; drop it so a new directory at this
			// path is watched afresh.
			_ = w.Remove(dir)
		}
		return true
	}
	return filepath.Dir(ev.Name) == dir
}

// ensureWatches watches the parent (to see dir appear) and dir when it
// exists. It is called before every scan, so a directory created between two
// events is watched before it is read.
func (s *Source) ensureWatches(w *fsnotify.Watcher, dir string) {
	have := w.WatchList()
	if parent := filepath.Dir(dir); parent != dir && !slices.Contains(have, parent) {
		if err := w.Add(parent); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("cannot watch parent of manifest directory; relying on relist", "parent", parent, "error", err)
		}
	}
	if slices.Contains(have, dir) {
		return
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return
	}
	if err := w.Add(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot watch manifest directory; relying on relist", "error", err)
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
