package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/internal/inotify"
	"github.com/podvisor/podvisor/internal/trust"
)

// DefaultRetryMax is the longest wait between two tries of a failed
// import under the default back-off.
const DefaultRetryMax = 30 * time.Second

// Importer imports one image archive and returns the names of the images
// it held. supervise implements it with containerd. The path it is given
// is named as the archive (an image may be named after the file) and
// opens the very file the Watcher checked: it may be a link to that
// descriptor, good only for the length of the call.
type Importer interface {
	Import(ctx context.Context, name string, archive io.Reader) ([]string, error)
}

// Options configures a Watcher.
type Options struct {
	// Dir is the images directory. Empty: there is none, Ready is closed at
	// once and nothing is watched.
	Dir string
	// Importer does the imports; required.
	Importer Importer
	// Log hears what was imported and what failed; nil discards.
	Log *slog.Logger
	// OnImport, when set, is called after a pass that imported at least one
	// archive.
	OnImport func()
	// OnWarning, when set, hears every permission warning (also logged):
	// the images directory, a parent, an archive or a symlink on the way
	// to it can be changed by someone other than root or TrustedUID. Each
	// is told once while it lasts; whether the archive is imported all
	// the same is AllowInsecure's.
	OnWarning func(msg string)
	// TrustedUID is a user trusted besides root to own the directory, its
	// parents and the archives; 0 trusts root only.
	TrustedUID int
	// AllowInsecure imports, with a warning, archives that such a user
	// could change, or that lie in a directory they could change; without
	// it those are not imported (OnWarning says why, prefixed "not
	// imported: ") and are looked at again with the failed imports' back-off.
	AllowInsecure bool
	// StateFile and Digests, when both set, let a restarted podvisor skip
	// the archives it imported before: StateFile records each imported
	// archive's version and the digests of its images (Digests looks them
	// up by name; a missing one is left out), and an archive unchanged
	// since, whose images are all still there with those digests, is not
	// imported again at start.
	StateFile string
	Digests   func(ctx context.Context, names []string) (map[string]string, error)
	// Backoff returns a new back-off for each thing retried: failed
	// imports, and a watch that cannot be set up. Nil means
	// backoff.Retry(time.Now, DefaultRetryMax).
	Backoff func() *backoff.Backoff
}

// version identifies a version of an archive (versionOf).
type version struct {
	size  int64
	mtime time.Time
	ino   uint64
}

// Watcher keeps an images directory imported; see the package
// documentation.
type Watcher struct {
	opts  Options
	log   *slog.Logger
	ready chan struct{}

	// What the first pass has imported so far, for Wait: image names, and
	// a channel closed (and replaced) at each of its imports.
	mu       sync.Mutex
	first    map[string]bool
	progress chan struct{}

	// Owned by Run's goroutine.
	known   map[string]archiveState // by file name: imported, as StateFile has it
	saved   []byte                  // StateFile's content as last read or written
	done    map[string]version      // by file name: imported
	failed  map[string]version      // by file name: last import failed
	pending map[string]bool         // announced complete since the last pass
	full    bool                    // every archive must be looked at
	retry   *backoff.Backoff        // between passes retrying failures
	retryAt time.Time               // when failures are tried again; zero: none
	warned  map[string][]string     // by file name ("" the directory): warnings told
}

// New returns a Watcher configured by opts, with its defaults applied.
func New(opts Options) *Watcher {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff == nil {
		opts.Backoff = func() *backoff.Backoff { return backoff.Retry(time.Now, DefaultRetryMax) }
	}
	return &Watcher{
		opts:     opts,
		log:      opts.Log,
		ready:    make(chan struct{}),
		first:    map[string]bool{},
		progress: make(chan struct{}),
		known:    map[string]archiveState{},
		done:     map[string]version{},
		failed:   map[string]version{},
		pending:  map[string]bool{},
		warned:   map[string][]string{},
		full:     true,
		retry:    opts.Backoff(),
	}
}

// Ready is closed once the first pass over the directory is over: every
// archive present at start has been imported or has failed to, and the
// directory is watched, so an archive completed afterwards is seen.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Wait returns once image is known to be as the images directory has it
// at start: the first pass has imported an archive naming it, or the pass
// is over (Ready), or ctx's error when ctx ends first. A pod thus waits
// for its own archive, not for every archive in the directory, and an
// archive dropped in while podvisor was down still replaces the image
// before the pod uses it. (Two archives naming one image: the first
// imported releases its pods; which that is is not defined.)
func (w *Watcher) Wait(ctx context.Context, image string) error {
	name, err := Normalize(image)
	for {
		w.mu.Lock()
		got, progress := err == nil && w.first[name], w.progress
		w.mu.Unlock()
		if got {
			return nil
		}
		select {
		case <-w.ready:
			return nil
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// imported records the images the first pass has imported and wakes
// their waiters; after the first pass it is a no-op.
func (w *Watcher) imported(names []string) {
	select {
	case <-w.ready:
		return
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range names {
		w.first[n] = true
	}
	close(w.progress)
	w.progress = make(chan struct{})
}

// Run imports the directory, closes Ready, and then imports archives as
// they are completed until ctx ends (at once when there is no Dir). It is
// called once.
func (w *Watcher) Run(ctx context.Context) {
	if w.opts.Dir == "" {
		close(w.ready)
		return
	}
	w.loadState()
	readied := false
	ready := func() {
		if !readied {
			readied = true
			close(w.ready)
		}
	}
	opts := inotify.Options{Dir: w.opts.Dir, Mask: archiveEvents, Log: w.log}
	// The first step, with the directory watched, is the first pass.
	step := func(now time.Time) (time.Time, error) {
		next := w.step(ctx, now)
		ready()
		return next, nil
	}
	_ = backoff.Loop(ctx, w.opts.Backoff(), func(ctx context.Context) error {
		return inotify.Watch(ctx, opts, w.handle, step)
	}, func(err error, wait time.Duration) {
		w.log.Warn("cannot watch images dir; retrying", "dir", w.opts.Dir, "err", err, "retryIn", wait)
		if !readied {
			// Pods must not wait for the watch: import what is there.
			w.pass(ctx, time.Now())
			w.full = true // and look again once watching
			ready()
		}
	})
}

// handle takes in one watch event.
func (w *Watcher) handle(ev inotify.Event) {
	switch ev.Op {
	case inotify.Entry:
		if isArchive(ev.Name) {
			w.pending[ev.Name] = true
		}
	default:
		// The directory appeared or was replaced, or events were lost.
		w.full = true
	}
}

// step imports what is due and returns when to be called again without
// an event (the zero time: only after one).
func (w *Watcher) step(ctx context.Context, now time.Time) time.Time {
	due := !w.retryAt.IsZero() && !now.Before(w.retryAt)
	if w.full || len(w.pending) > 0 || due {
		w.pass(ctx, now)
	}
	return w.retryAt
}

// pass imports the archives that are due: announced complete, or every
// one on a full pass, and failed ones when their retry is due; an archive
// unchanged since it was imported, or since it failed before its retry
// is due, is skipped.
func (w *Watcher) pass(ctx context.Context, now time.Time) {
	retryDue := !now.Before(w.retryAt)
	nImported, nFailed, nKnown := 0, 0, 0
	if !w.checkDir() {
		// Refused: every archive is looked at again once it is fixed.
		w.full = true
		w.retryAt = time.Now().Add(w.retry.Next())
		return
	}
	names, err := w.candidates()
	var errs []error
	if err != nil {
		errs = append(errs, err)
		nFailed++
	}
	for _, name := range names {
		switch res, err := w.archive(ctx, name, retryDue); res {
		case outcomeStopped:
			return // stopping: nothing more is due
		case outcomeFailed:
			nFailed++
			if err != nil {
				errs = append(errs, err)
			}
		case outcomeKnown:
			nKnown++
		case outcomeImported:
			nImported++
		}
	}
	switch {
	case nFailed > 0:
		w.retryAt = time.Now().Add(w.retry.Next())
	case len(w.failed) == 0 && !w.full:
		w.retry.Reset()
		w.retryAt = time.Time{}
	}
	if err := errors.Join(errs...); err != nil {
		w.log.Error("import images", "dir", w.opts.Dir, "err", err)
	}
	if nImported+nKnown > 0 && w.opts.OnImport != nil {
		w.opts.OnImport()
	}
}

// outcome is what a pass did with one archive.
type outcome int

const (
	outcomeSkipped  outcome = iota // gone, or not due
	outcomeFailed                  // refused or failed: retried with the back-off
	outcomeKnown                   // unchanged since its import
	outcomeImported                // imported
	outcomeStopped                 // ctx ended during the import
)

// archive imports the archive name if it is due. It is opened with
// trust.Open, which checks it and every directory and symlink on the way
// to it on descriptors, and the Importer reads that descriptor: an
// archive swapped, or a link on the way re-pointed, after the check is
// not what is imported.
func (w *Watcher) archive(ctx context.Context, name string, retryDue bool) (outcome, error) {
	p := filepath.Join(w.opts.Dir, name)
	f, problems, err := trust.Open(p, w.opts.TrustedUID)
	var fi os.FileInfo
	if err == nil {
		defer f.Close()
		fi, err = f.Stat()
	}
	if err != nil {
		// Gone, not a regular file, or a dangling link: not an archive
		// (now).
		if !errors.Is(err, os.ErrNotExist) {
			w.log.Debug("not an image archive", "file", p, "err", err)
		}
		delete(w.done, name)
		delete(w.failed, name)
		delete(w.warned, name)
		w.forget(name)
		return outcomeSkipped, nil
	}
	v := versionOf(fi)
	if w.done[name] == v {
		return outcomeSkipped, nil
	}
	if fv, ok := w.failed[name]; ok && fv == v && !retryDue {
		return outcomeSkipped, nil
	}
	var msgs []string
	for _, pr := range problems {
		// The images directory's own problems are told once, for it.
		if m := pr.String(); !slices.Contains(w.warned[""], m) {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > 0 && !w.opts.AllowInsecure {
		w.warn(name, refused(msgs))
		w.failed[name] = v // looked at again with the back-off
		w.forget(name)
		return outcomeFailed, nil
	}
	w.warn(name, msgs)
	if imgs, ok := w.unchanged(ctx, name, v); ok {
		delete(w.failed, name)
		w.done[name] = v
		w.log.Info("image archive unchanged since its import", "file", p, "images", imgs)
		w.imported(imgs)
		return outcomeKnown, nil
	}
	imgs, err := w.importFile(ctx, p, f)
	if ctx.Err() != nil {
		return outcomeStopped, nil
	}
	if err != nil {
		w.failed[name] = v
		w.forget(name)
		return outcomeFailed, fmt.Errorf("%s: %w", p, err)
	}
	delete(w.failed, name)
	w.done[name] = v
	w.log.Info("imported image archive", "file", p, "images", imgs)
	w.remember(ctx, name, v, imgs)
	w.imported(imgs)
	return outcomeImported, nil
}

// importFile has the Importer import f, the archive at path as it was
// checked, from that descriptor: whatever is done to path meanwhile, what
// is imported is the file whose trust was checked.
func (w *Watcher) importFile(ctx context.Context, path string, f *os.File) ([]string, error) {
	if testHookBeforeImport != nil {
		testHookBeforeImport(path)
	}
	return w.opts.Importer.Import(ctx, filepath.Base(path), f)
}

// testHookBeforeImport, set by tests only, runs between the check of an
// archive and its import.
var testHookBeforeImport func(path string)

// candidates returns the names a pass looks at, and forgets what it
// knew of archives a full pass no longer finds.
func (w *Watcher) candidates() ([]string, error) {
	names := slices.Collect(maps.Keys(w.pending))
	names = append(names, slices.Collect(maps.Keys(w.failed))...)
	full := w.full
	w.full, w.pending = false, map[string]bool{}
	if !full {
		slices.Sort(names)
		return slices.Compact(names), nil
	}
	entries, err := os.ReadDir(w.opts.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		// Keep what is known and try again: the directory may be
		// readable later.
		w.full = true
		return nil, fmt.Errorf("read images dir: %w", err)
	}
	names = names[:0]
	for _, e := range entries {
		if isArchive(e.Name()) {
			names = append(names, e.Name())
		}
	}
	for _, m := range []map[string]version{w.done, w.failed} {
		maps.DeleteFunc(m, func(name string, _ version) bool { return !slices.Contains(names, name) })
	}
	for name := range w.known {
		if !slices.Contains(names, name) {
			w.forget(name)
		}
	}
	maps.DeleteFunc(w.warned, func(name string, _ []string) bool { return name != "" && !slices.Contains(names, name) })
	return names, nil
}

// checkDir warns of the problems of the images directory, its parents
// and every symlink on the way to it (trust.CheckDir, on descriptors),
// and reports whether its archives may be imported: it has none, or
// AllowInsecure is set.
func (w *Watcher) checkDir() bool {
	problems, err := trust.CheckDir(w.opts.Dir, w.opts.TrustedUID)
	if err != nil {
		w.log.Warn("cannot check images dir; retrying", "dir", w.opts.Dir, "err", err)
		return false
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.String())
	}
	if len(msgs) > 0 && !w.opts.AllowInsecure {
		w.warn("", refused(msgs))
		return false
	}
	w.warn("", msgs)
	return true
}

// refused words the problems of what is not imported.
func refused(msgs []string) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = "not imported: " + m + " (fix with chmod go-w and chown root, or run with --allow-insecure-manifests)"
	}
	return out
}

// warn tells the warnings of key (an archive's name, "" the directory)
// not told at its last check, and remembers them all.
func (w *Watcher) warn(key string, msgs []string) {
	for _, m := range msgs {
		if slices.Contains(w.warned[key], m) {
			continue
		}
		w.log.Warn("insecure images permissions", "warning", m)
		if w.opts.OnWarning != nil {
			w.opts.OnWarning(m)
		}
	}
	if len(msgs) == 0 {
		delete(w.warned, key)
	} else {
		w.warned[key] = msgs
	}
}
