package inotify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestClassify(t *testing.T) {
	const dirWd, parentWd = 5, 6
	tests := []struct {
		name string
		wd   int
		mask uint32
		file string
		want Event
		ok   bool
	}{
		{"overflow", -1, unix.IN_Q_OVERFLOW, "", Event{Op: Overflow}, true},
		{"close-write", dirWd, unix.IN_CLOSE_WRITE, "web.yaml", Event{Op: Entry, Name: "web.yaml", Mask: unix.IN_CLOSE_WRITE}, true},
		{"create dir", dirWd, unix.IN_CREATE | unix.IN_ISDIR, "..2025", Event{Op: Entry, Name: "..2025", Mask: unix.IN_CREATE | unix.IN_ISDIR}, true},
		{"directory chmod", dirWd, unix.IN_ATTRIB | unix.IN_ISDIR, "", Event{Op: DirChanged, Mask: unix.IN_ATTRIB | unix.IN_ISDIR}, true},
		{"directory deleted", dirWd, unix.IN_DELETE_SELF, "", Event{Op: DirChanged, Mask: unix.IN_DELETE_SELF}, true},
		{"directory moved", dirWd, unix.IN_MOVE_SELF, "", Event{Op: DirChanged, Mask: unix.IN_MOVE_SELF}, true},
		{"directory swapped in the parent", parentWd, unix.IN_MOVED_TO, "manifests", Event{Op: DirChanged, Mask: unix.IN_MOVED_TO}, true},
		{"directory created in the parent", parentWd, unix.IN_CREATE | unix.IN_ISDIR, "manifests", Event{Op: DirChanged, Mask: unix.IN_CREATE | unix.IN_ISDIR}, true},
		{"parent deleted", parentWd, unix.IN_DELETE_SELF, "", Event{Op: DirChanged, Mask: unix.IN_DELETE_SELF}, true},
		{"another entry of the parent", parentWd, unix.IN_CREATE, "other", Event{}, false},
		{"a stale watch", 3, unix.IN_CLOSE_WRITE, "web.yaml", Event{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &watcher{dirWd: dirWd, parentWd: parentWd, base: "manifests"}
			got, ok := w.classify(tt.wd, tt.mask, tt.file)
			if got != tt.want || ok != tt.ok {
				t.Errorf("classify = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}

	w := &watcher{dirWd: dirWd, parentWd: parentWd, base: "manifests"}
	if ev, ok := w.classify(dirWd, unix.IN_IGNORED, ""); !ok || ev.Op != DirChanged || w.dirWd != -1 {
		t.Errorf("IN_IGNORED on the directory: %+v %v, dirWd %d; want DirChanged and the watch forgotten", ev, ok, w.dirWd)
	}
	if ev, ok := w.classify(parentWd, unix.IN_IGNORED, ""); !ok || ev.Op != DirChanged || w.parentWd != -1 {
		t.Errorf("IN_IGNORED on the parent: %+v %v, parentWd %d; want DirChanged and the watch forgotten", ev, ok, w.parentWd)
	}
}

// recorder keeps the events a Watch reported and wakes whoever waits for
// one.
type recorder struct {
	mu     sync.Mutex
	events []Event
	signal chan struct{}
}

func (r *recorder) handle(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// waitFor waits until an event after the first from recorded ones
// satisfies cond, and returns the index after it, so the next wait looks
// only at later events.
func (r *recorder) waitFor(t *testing.T, from int, what string, cond func(Event) bool) int {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		r.mu.Lock()
		evs := slices.Clone(r.events)
		r.mu.Unlock()
		for i := from; i < len(evs); i++ {
			if cond(evs[i]) {
				return i + 1
			}
		}
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; events %+v", what, evs[from:])
		}
	}
}

// between returns the events from index from up to to.
func (r *recorder) between(from, to int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[from:to])
}

func op(o Op) func(Event) bool { return func(e Event) bool { return e.Op == o } }

func entry(name string, mask uint32) func(Event) bool {
	return func(e Event) bool { return e.Op == Entry && e.Name == name && e.Mask&mask != 0 }
}

// startWatch runs Watch until the test ends and checks it then returns
// context.Canceled.
func startWatch(t *testing.T, opts Options, step func(time.Time) (time.Time, error)) *recorder {
	t.Helper()
	r := &recorder{signal: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, opts, r.handle, step) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Watch returned %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Watch did not return after cancel")
		}
	})
	return r
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const completeMask = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO

func TestWatchEntries(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	r := startWatch(t, Options{Dir: dir, Mask: completeMask}, nil)
	i := r.waitFor(t, 0, "the directory watched", op(DirWatched))

	write(t, filepath.Join(dir, "a.tar"), "a")
	i = r.waitFor(t, i, "close-write of a.tar", entry("a.tar", unix.IN_CLOSE_WRITE))

	write(t, filepath.Join(outside, "b.tar"), "b")
	if err := os.Rename(filepath.Join(outside, "b.tar"), filepath.Join(dir, "b.tar")); err != nil {
		t.Fatal(err)
	}
	i = r.waitFor(t, i, "moved-to of b.tar", entry("b.tar", unix.IN_MOVED_TO))

	// A file still open for writing is not reported: the sentinel closed
	// after it arrives, and events come in order.
	f, err := os.Create(filepath.Join(dir, "open.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("half"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sentinel"), "s")
	j := r.waitFor(t, i, "close-write of the sentinel", entry("sentinel", unix.IN_CLOSE_WRITE))
	for _, ev := range r.between(i, j) {
		if ev.Name == "open.tar" {
			t.Errorf("a file still open for writing was reported: %+v", ev)
		}
	}
	f.Close()
	r.waitFor(t, j, "close-write of open.tar", entry("open.tar", unix.IN_CLOSE_WRITE))
}

func TestWatchDirectoryLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	// No polling in time: the parent's watch must tell.
	r := startWatch(t, Options{Dir: dir, Mask: completeMask, Poll: time.Hour}, nil)

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	i := r.waitFor(t, 0, "the directory watched once created", op(DirWatched))
	write(t, filepath.Join(dir, "a.tar"), "a")
	i = r.waitFor(t, i, "close-write in the new directory", entry("a.tar", unix.IN_CLOSE_WRITE))

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	i = r.waitFor(t, i, "the directory gone", op(DirChanged))

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	i = r.waitFor(t, i, "the directory watched again", op(DirWatched))
	write(t, filepath.Join(dir, "b.tar"), "b")
	r.waitFor(t, i, "close-write in the re-created directory", entry("b.tar", unix.IN_CLOSE_WRITE))
}

func TestWatchSymlinkSwap(t *testing.T) {
	root := t.TempDir()
	a, b, dir := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "dir")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", dir); err != nil {
		t.Fatal(err)
	}
	r := startWatch(t, Options{Dir: dir, Mask: completeMask, Poll: time.Hour}, nil)
	i := r.waitFor(t, 0, "the directory watched", op(DirWatched))

	// The atomic swap: a new symlink renamed over the old one.
	if err := os.Symlink("b", filepath.Join(root, "dir.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "dir.tmp"), dir); err != nil {
		t.Fatal(err)
	}
	i = r.waitFor(t, i, "the new target watched", op(DirWatched))

	write(t, filepath.Join(a, "old.tar"), "old")
	write(t, filepath.Join(b, "new.tar"), "new")
	j := r.waitFor(t, i, "close-write in the new target", entry("new.tar", unix.IN_CLOSE_WRITE))
	for _, ev := range r.between(i, j) {
		if ev.Name == "old.tar" {
			t.Errorf("a file in the old target was reported: %+v", ev)
		}
	}
}

func TestWatchPollsWithoutParent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "y", "images")
	r := startWatch(t, Options{Dir: dir, Mask: completeMask, Poll: 10 * time.Millisecond}, nil)
	// Neither the directory nor its parent exists: only polling can see
	// them appear.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	i := r.waitFor(t, 0, "the directory watched once its parent exists", op(DirWatched))
	write(t, filepath.Join(dir, "a.tar"), "a")
	r.waitFor(t, i, "close-write", entry("a.tar", unix.IN_CLOSE_WRITE))
}

func TestWatchStep(t *testing.T) {
	dir := t.TempDir()
	openFDs(t) // the first look may set up the runtime's poller
	fds := openFDs(t)

	// step runs at the start, after events, and at the time it asks for.
	var mu sync.Mutex
	var calls int
	stepped := make(chan struct{}, 1)
	r := &recorder{signal: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, Options{Dir: dir, Mask: completeMask}, r.handle, func(now time.Time) (time.Time, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			select {
			case stepped <- struct{}{}:
			default:
			}
			if calls < 3 {
				return now.Add(10 * time.Millisecond), nil
			}
			return time.Time{}, nil
		})
	}()
	deadline := time.After(5 * time.Second)
	for n := 0; n < 3; {
		select {
		case <-stepped:
			mu.Lock()
			n = calls
			mu.Unlock()
		case <-deadline:
			t.Fatalf("step ran %d times, want 3 (start, then twice at the times it asked for)", calls)
		}
	}
	write(t, filepath.Join(dir, "a.tar"), "a")
	r.waitFor(t, 0, "close-write", entry("a.tar", unix.IN_CLOSE_WRITE))
	select {
	case <-stepped:
	case <-time.After(5 * time.Second):
		t.Fatal("step did not run after an event")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d file descriptors open after Watch, %d before", got, fds)
	}

	// A failing step ends Watch with its error.
	boom := errors.New("boom")
	err := Watch(t.Context(), Options{Dir: dir}, func(Event) {}, func(time.Time) (time.Time, error) { return time.Time{}, boom })
	if !errors.Is(err, boom) {
		t.Errorf("Watch with a failing step returned %v, want %v", err, boom)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
