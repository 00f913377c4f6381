package manifest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/podvisor/podvisor/internal/inotify"
)

const (
	// DefaultRelistPeriod is SourceOptions.RelistPeriod's default; kubelet
	// relists its static pod directory every 20s too.
	DefaultRelistPeriod = 20 * time.Second
	// DefaultDebounce is SourceOptions.Debounce's default: long enough to
	// coalesce an editor's write-rename-chmod burst, or a delete and
	// re-create, short enough not to be noticed.
	DefaultDebounce = 100 * time.Millisecond
	// DefaultQuickDebounce is SourceOptions.QuickDebounce's default.
	DefaultQuickDebounce = 5 * time.Millisecond
)

// SourceOptions configures a Source. A zero field takes the default its
// comment names.
type SourceOptions struct {
	// Dir is the manifest directory. It may be missing, appear later, be
	// removed or be a symlink swapped atomically.
	Dir string
	// NodeName names the pods ("<name>-<node>") and goes into their UIDs.
	NodeName string
	// Log hears about skipped files, errors and the watch; nil discards.
	Log *slog.Logger
	// RelistPeriod is how often the directory is re-read without any event.
	// Zero means DefaultRelistPeriod.
	RelistPeriod time.Duration
	// Debounce is the delay between an event and the rescan it causes; events
	// in between join the same rescan. Zero means DefaultDebounce.
	Debounce time.Duration
	// QuickDebounce replaces Debounce after a file was closed after writing
	// or renamed in: its content is complete, so only a burst of such
	// events is worth waiting for. Zero means DefaultQuickDebounce; it is
	// never longer than Debounce.
	QuickDebounce time.Duration
	// StateDir, when set, is where the last good content of every manifest
	// is kept (StateFile(StateDir)), so that a restart with a broken file
	// keeps its pods, and duplicates resolve as before the restart; of a
	// Secret only its name, keys and digest (see RunDir). Empty keeps
	// nothing.
	StateDir string
	// RunDir, with StateDir, is where the content of the last good
	// Secrets is kept (SecretsFile(RunDir)): a tmpfs, gone at reboot,
	// since a Secret's values never go to disk; StateFile only names
	// them. Empty keeps their content in memory: a restart with a
	// Secret's manifest broken then loses that Secret.
	RunDir string
	// UnknownFields says what an unknown field does; the zero value makes
	// it an error.
	UnknownFields UnknownFieldPolicy
	// TrustedUID is a user trusted besides root to own the directory, its
	// parents and the manifests; files of other users get a permission
	// warning. Zero trusts root only.
	TrustedUID int
	// AllowInsecure uses, with a warning, the manifests such a user could
	// change; without it they are not used (an error names why) and a pod
	// already running from one keeps its last good version.
	AllowInsecure bool
	// Observer, when set, sees every snapshot before it is sent (for
	// metrics).
	Observer Observer
}

// Observer is told of every snapshot a Source sends; ObserveSnapshot must
// be quick and must not keep or change the snapshot.
type Observer interface {
	ObserveSnapshot(Snapshot)
}

// Source watches a directory and sends a full Snapshot on out after every
// change and every relist that finds one. The first scan is always sent,
// even when empty.
//
// It watches the directory and its parent with inotify and reads a file
// only when its writer closed it or it was renamed (or linked) into place;
// see the package documentation for the exact rules, and for what a
// relist may read.
type Source struct {
	opts SourceOptions // defaults applied
	log  *slog.Logger
	// watch is inotify.Watch; a test replaces it to lose events.
	watch func(context.Context, inotify.Options, func(inotify.Event), func(time.Time) (time.Time, error)) error
}

// NewSource returns a Source configured by opts, with its defaults applied.
func NewSource(opts SourceOptions) *Source {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	opts.RelistPeriod = cmpOr(opts.RelistPeriod, DefaultRelistPeriod)
	opts.Debounce = cmpOr(opts.Debounce, DefaultDebounce)
	opts.QuickDebounce = min(cmpOr(opts.QuickDebounce, DefaultQuickDebounce), opts.Debounce)
	return &Source{opts: opts, log: opts.Log.With("dir", opts.Dir), watch: inotify.Watch}
}

// newScanner returns the scanner Run uses, with the persisted state loaded.
func (s *Source) newScanner() *scanner {
	sc := newScanner(s.opts.Dir, s.opts.NodeName, s.log)
	sc.opts = ParseOptions{UnknownFields: s.opts.UnknownFields, AllowInsecure: s.opts.AllowInsecure}
	sc.trustedUID = s.opts.TrustedUID
	if s.opts.StateDir != "" {
		sc.statePath = StateFile(s.opts.StateDir)
		if s.opts.RunDir != "" {
			sc.secrets.path = SecretsFile(s.opts.RunDir)
		}
	}
	sc.loadState()
	return sc
}

// watchEvent is one inotify event, reduced to what the Source acts on.
type watchEvent struct {
	overflow bool      // events were lost: relist everything
	dir      bool      // the directory itself may have appeared, gone or been swapped
	watched  bool      // the directory is watched anew: no event told what it holds
	name     string    // an entry of the directory
	kind     fileEvent // what happened to it
}

// translate turns a watch event into what the Source acts on.
func translate(ev inotify.Event) (watchEvent, bool) {
	switch ev.Op {
	case inotify.Overflow:
		return watchEvent{overflow: true}, true
	case inotify.DirChanged:
		return watchEvent{dir: true}, true
	case inotify.DirWatched:
		return watchEvent{dir: true, watched: true}, true
	}
	kind, ok := entryEvent(ev.Mask)
	if !ok {
		return watchEvent{}, false
	}
	return watchEvent{name: ev.Name, kind: kind}, true
}

// handle applies one event and reports whether a rescan is due.
func (s *Source) handle(sc *scanner, ev watchEvent) bool {
	switch {
	case ev.overflow:
		s.log.Warn("inotify queue overflowed; relisting the manifest directory")
		sc.resetEvents()
		return true
	case ev.watched:
		// A directory that appeared or replaced the old one: its files
		// must be read in full, since no event announced them.
		sc.resetEvents()
		return true
	case ev.dir:
		return true
	case ev.name != "":
		return sc.fileEvent(ev.name, ev.kind)
	}
	return false
}

// Run watches until ctx is done and then returns ctx.Err(). It returns
// early only when the watcher cannot be created or fails for good. Run must
// not be called twice at once on one Source; out is never closed.
func (s *Source) Run(ctx context.Context, out chan<- Snapshot) error {
	relistPeriod, debounce, quickDebounce := s.opts.RelistPeriod, s.opts.Debounce, s.opts.QuickDebounce
	sc := s.newScanner()
	dir := sc.dir

	var (
		pending     bool
		slowPending bool // the pending scan waits for a delete's debounce
		debounceAt  time.Time
		relistAt    time.Time // zero until the first scan
	)
	handle := func(iev inotify.Event) {
		ev, ok := translate(iev)
		if !ok || !s.handle(sc, ev) {
			return
		}
		// A file closed after writing or renamed in is complete: read it
		// almost at once (a few milliseconds gather a burst of renames);
		// creates and writes only matter when they complete something
		// (a symlink), so they count as quick too. A delete, a change of
		// the directory or of permissions starts the full debounce, which
		// later events join and no quick event shortens: a delete followed
		// by the same content changes nothing.
		now := time.Now()
		quick := ev.name != "" && (ev.kind == evClosed || ev.kind == evCreate || ev.kind == evModify)
		switch {
		case !quick:
			if !slowPending {
				slowPending, debounceAt = true, now.Add(debounce)
			}
			pending = true
		case slowPending:
			// Joins the pending debounced scan.
		default:
			at := now.Add(quickDebounce)
			if !pending || at.Before(debounceAt) {
				pending, debounceAt = true, at
			}
		}
	}
	// scan runs with the watches matching the directory (a new directory
	// is watched before it is read, and read in full) and the events queued
	// so far taken in, so that a file whose writer is still busy is known
	// to be: inotify.Watch sees to both before every step.
	scan := func(mode scanMode) error {
		first := sc.prev == nil
		snap, changed := sc.scan(mode)
		if !changed {
			return nil
		}
		s.log.Debug("manifest snapshot", "pods", len(snap.Pods), "errors", len(snap.Errors), "warnings", len(snap.Warnings), "first", first)
		if s.opts.Observer != nil {
			s.opts.Observer.ObserveSnapshot(snap)
		}
		select {
		case out <- snap:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	step := func(now time.Time) (time.Time, error) {
		var err error
		switch {
		case relistAt.IsZero():
			pending, slowPending = false, false
			err = scan(scanRelist)
			relistAt = time.Now().Add(relistPeriod)
		case !now.Before(relistAt):
			s.log.Debug("manifest relist")
			pending, slowPending = false, false
			relistAt = now.Add(relistPeriod)
			err = scan(scanRelist)
		case pending && !now.Before(debounceAt):
			pending, slowPending = false, false
			err = scan(scanEvents)
		}
		if err != nil {
			return time.Time{}, err
		}
		next := relistAt
		if pending && debounceAt.Before(next) {
			next = debounceAt
		}
		return next, nil
	}

	err := s.watch(ctx, inotify.Options{Dir: dir, Mask: dirMask, Log: s.log}, handle, step)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("watch manifest directory %s: %w", dir, err)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
