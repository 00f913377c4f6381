package images

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
)

// fakeImporter records every import with the content the archive had at
// that moment, and fails an archive as many times as fail says.
type fakeImporter struct {
	mu      sync.Mutex
	imports []imported
	fail    map[string]int
	signal  chan struct{}
}

type imported struct {
	name, content string
	err           bool
}

func newFake() *fakeImporter {
	return &fakeImporter{fail: map[string]int{}, signal: make(chan struct{}, 1)}
}

func (f *fakeImporter) Import(ctx context.Context, name string, archive io.Reader) ([]string, error) {
	data, err := io.ReadAll(archive)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	failing := f.fail[name] > 0
	if failing {
		f.fail[name]--
	}
	f.imports = append(f.imports, imported{name, string(data), failing})
	f.mu.Unlock()
	select {
	case f.signal <- struct{}{}:
	default:
	}
	if failing {
		return nil, errors.New("boom")
	}
	return []string{"docker.io/library/" + name}, nil
}

// of returns the recorded imports of name.
func (f *fakeImporter) of(name string) []imported {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []imported
	for _, i := range f.imports {
		if i.name == name {
			out = append(out, i)
		}
	}
	return out
}

// names returns every name imported successfully, in order.
func (f *fakeImporter) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, i := range f.imports {
		if !i.err {
			out = append(out, i.name)
		}
	}
	return out
}

// waitFor waits until cond holds, woken by every import.
func (f *fakeImporter) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-f.signal:
		case <-deadline:
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("timed out waiting for %s; imports %+v", what, f.imports)
		}
	}
}

// importedWith reports whether name was imported with exactly content.
func (f *fakeImporter) importedWith(name, content string) func() bool {
	return func() bool {
		return slices.ContainsFunc(f.of(name), func(i imported) bool { return !i.err && i.content == content })
	}
}

// fastRetry retries within milliseconds, so a test sees several retries.
func fastRetry() *backoff.Backoff {
	return &backoff.Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond}
}

// startWatcher runs a Watcher on dir until the test ends, waits for
// Ready, and checks that Run returns once its context ends.
func startWatcher(t *testing.T, dir string, f *fakeImporter, onImport func()) *Watcher {
	t.Helper()
	w := New(Options{Dir: dir, Importer: f, OnImport: onImport, Backoff: fastRetry})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	select {
	case <-w.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("Ready not closed")
	}
	return w
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherFirstPass(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"a.tar": "a", "b.tar": "b", ".hidden.tar": "h", "notes.txt": "n"} {
		write(t, filepath.Join(dir, name), content)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.tar"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	var mu sync.Mutex
	calls := 0
	startWatcher(t, dir, f, func() { mu.Lock(); calls++; mu.Unlock() })
	// Ready means the first pass is over: no waiting here.
	if got := f.names(); !slices.Equal(got, []string{"a.tar", "b.tar"}) {
		t.Errorf("imported %v at Ready, want [a.tar b.tar]", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("OnImport called %d times after the first pass, want 1", calls)
	}
}

func TestWatcherCompletedArchives(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "a.tar"), "a")
	f := newFake()
	var mu sync.Mutex
	calls := 0
	startWatcher(t, dir, f, func() { mu.Lock(); calls++; mu.Unlock() })

	t.Run("close-write", func(t *testing.T) {
		write(t, filepath.Join(dir, "c.tar"), "c")
		f.waitFor(t, "c.tar imported", f.importedWith("c.tar", "c"))
	})
	t.Run("rename-in", func(t *testing.T) {
		write(t, filepath.Join(outside, "d.tar"), "d")
		if err := os.Rename(filepath.Join(outside, "d.tar"), filepath.Join(dir, "d.tar")); err != nil {
			t.Fatal(err)
		}
		f.waitFor(t, "d.tar imported", f.importedWith("d.tar", "d"))
	})
	t.Run("half-written", func(t *testing.T) {
		h, err := os.Create(filepath.Join(dir, "e.tar"))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if _, err := h.WriteString("first half,"); err != nil {
			t.Fatal(err)
		}
		// Another archive completed meanwhile does not import this one.
		write(t, filepath.Join(dir, "f.tar"), "f")
		f.waitFor(t, "f.tar imported", f.importedWith("f.tar", "f"))
		if got := f.of("e.tar"); len(got) != 0 {
			t.Fatalf("an archive still being written was imported: %+v", got)
		}
		if _, err := h.WriteString("second half"); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		f.waitFor(t, "e.tar imported once closed", f.importedWith("e.tar", "first half,second half"))
		if got := f.of("e.tar"); len(got) != 1 {
			t.Errorf("e.tar imported %d times, want once: %+v", len(got), got)
		}
	})
	t.Run("unchanged", func(t *testing.T) {
		// Renamed out and back in: same size and mtime, not imported again.
		if err := os.Rename(filepath.Join(dir, "a.tar"), filepath.Join(outside, "a.tar")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(outside, "a.tar"), filepath.Join(dir, "a.tar")); err != nil {
			t.Fatal(err)
		}
		// Events are taken in order: once the sentinel is imported, a.tar's
		// rename has been seen.
		write(t, filepath.Join(dir, "sentinel.tar"), "s")
		f.waitFor(t, "sentinel.tar imported", f.importedWith("sentinel.tar", "s"))
		if got := f.of("a.tar"); len(got) != 1 {
			t.Errorf("an unchanged archive was imported %d times, want once: %+v", len(got), got)
		}
		// Written again, it is.
		write(t, filepath.Join(dir, "a.tar"), "a2")
		f.waitFor(t, "a.tar imported again once rewritten", f.importedWith("a.tar", "a2"))
	})
	// OnImport follows the import the fake signalled: poll for it.
	n := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n = calls
		mu.Unlock()
		if n >= 7 {
			break
		}
	}
	if n != 7 {
		t.Errorf("OnImport called %d times, want once per pass that imported (7)", n)
	}
}

func TestWatcherRetriesFailedImports(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bad.tar"), "x")
	f := newFake()
	f.fail["bad.tar"] = 3
	f.fail["later.tar"] = 2
	startWatcher(t, dir, f, nil)
	// Failed in the first pass: Ready does not wait for the retries.
	if got := f.of("bad.tar"); len(got) != 1 || !got[0].err {
		t.Fatalf("imports of bad.tar at Ready: %+v, want one failure", got)
	}
	f.waitFor(t, "bad.tar imported after three failures", f.importedWith("bad.tar", "x"))
	if got := f.of("bad.tar"); len(got) != 4 {
		t.Errorf("bad.tar tried %d times, want 4 (three failures, then success): %+v", len(got), got)
	}

	write(t, filepath.Join(dir, "later.tar"), "y")
	f.waitFor(t, "later.tar imported after two failures", f.importedWith("later.tar", "y"))
	// Once imported, neither is tried again.
	write(t, filepath.Join(dir, "sentinel.tar"), "s")
	f.waitFor(t, "sentinel.tar imported", f.importedWith("sentinel.tar", "s"))
	if got := len(f.of("bad.tar")) + len(f.of("later.tar")); got != 7 {
		t.Errorf("%d imports of bad.tar and later.tar, want 7", got)
	}
}

func TestWatcherWaitsForDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	f := newFake()
	startWatcher(t, dir, f, nil)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.tar"), "a")
	f.waitFor(t, "a.tar imported in a directory created later", f.importedWith("a.tar", "a"))
}

func TestWatcherNoDirectory(t *testing.T) {
	w := New(Options{Importer: newFake()})
	done := make(chan struct{})
	go func() { defer close(done); w.Run(t.Context()) }()
	for what, ch := range map[string]<-chan struct{}{"Ready": w.Ready(), "Run": done} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("without a directory, %s did not end at once", what)
		}
	}
}

// heldImporter imports each archive as the image names says, and holds an
// archive's import while its hold channel is open.
type heldImporter struct {
	names map[string]string
	hold  map[string]chan struct{}
}

func (h heldImporter) Import(ctx context.Context, name string, _ io.Reader) ([]string, error) {
	if c, ok := h.hold[name]; ok {
		select {
		case <-c:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return []string{h.names[name]}, nil
}

// TestWatcherWaitPerImage: during the first pass a pod's image is let go
// once its own archive is imported, while a later archive is still being
// imported; an image no archive names waits for the pass's end.
func TestWatcherWaitPerImage(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.tar", "b.tar"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	imp := heldImporter{
		names: map[string]string{"a.tar": "docker.io/library/busybox:1.36", "b.tar": "registry.k8s.io/etcd:3.6.5-0"},
		hold:  map[string]chan struct{}{"b.tar": make(chan struct{})},
	}
	w := New(Options{Dir: dir, Importer: imp})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go w.Run(ctx)

	waitB, waitOther := make(chan error, 1), make(chan error, 1)
	go func() { waitB <- w.Wait(ctx, "registry.k8s.io/etcd:3.6.5-0") }()
	go func() { waitOther <- w.Wait(ctx, "nginx") }()
	// a.tar's image, named as a pod names it.
	if err := w.Wait(ctx, "busybox:1.36"); err != nil {
		t.Fatalf("the first archive's image was not let go: %v", err)
	}
	select {
	case <-w.Ready():
		t.Fatal("the first pass ended while b.tar's import is held")
	case err := <-waitB:
		t.Fatalf("b.tar's image let go before b.tar was imported (%v)", err)
	case err := <-waitOther:
		t.Fatalf("an image no archive names let go before the first pass ended (%v)", err)
	default:
	}
	close(imp.hold["b.tar"])
	if err := <-waitB; err != nil {
		t.Errorf("b.tar's image: %v", err)
	}
	if err := <-waitOther; err != nil {
		t.Errorf("an image no archive names, after the first pass: %v", err)
	}
	select {
	case <-w.Ready():
	default:
		t.Error("an image no archive names was let go before Ready")
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := New(Options{Dir: dir, Importer: imp}).Wait(done, "nginx"); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on an ended context: %v, want context.Canceled", err)
	}
}

// fakeStore is what the fake importer's images resolve to: digests by
// image name, as the runtime holds them.
type fakeStore struct {
	mu      sync.Mutex
	digests map[string]string
	fail    error
}

func (s *fakeStore) Digests(_ context.Context, names []string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]string{}
	for _, n := range names {
		if d, ok := s.digests[n]; ok {
			out[n] = d
		}
	}
	return out, nil
}

func (s *fakeStore) set(name, digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if digest == "" {
		delete(s.digests, name)
	} else {
		s.digests[name] = digest
	}
}

// runOnce runs a Watcher with a state file over dir until its first pass
// ends, and returns the imports it made.
func runOnce(t *testing.T, dir, stateFile string, st *fakeStore) []string {
	t.Helper()
	f := newFake()
	w := New(Options{Dir: dir, Importer: f, StateFile: stateFile, Digests: st.Digests, Backoff: fastRetry})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-w.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("Ready not closed")
	}
	return f.names()
}

// TestWatcherSkipsUnchangedAtStart: a restarted podvisor does not import
// again an archive it imported before when the archive is unchanged and
// every image it named is still there with the digest it had; one
// rewritten, replaced, or whose image is gone or changed, is imported.
func TestWatcherSkipsUnchangedAtStart(t *testing.T) {
	dir, stateFile := t.TempDir(), filepath.Join(t.TempDir(), "images", "state.json")
	write(t, filepath.Join(dir, "a.tar"), "a")
	write(t, filepath.Join(dir, "b.tar"), "b")
	// The fake importer names a.tar's image docker.io/library/a.tar.
	st := &fakeStore{digests: map[string]string{"docker.io/library/a.tar": "sha256:a", "docker.io/library/b.tar": "sha256:b"}}
	if got := runOnce(t, dir, stateFile, st); !slices.Equal(got, []string{"a.tar", "b.tar"}) {
		t.Fatalf("first start imported %v, want both", got)
	}
	if got := runOnce(t, dir, stateFile, st); len(got) != 0 {
		t.Errorf("a restart imported %v again, all unchanged", got)
	}
	// b's image was changed in the runtime (re-tagged, say): b.tar again.
	st.set("docker.io/library/b.tar", "sha256:other")
	if got := runOnce(t, dir, stateFile, st); !slices.Equal(got, []string{"b.tar"}) {
		t.Errorf("after b's image changed, imported %v, want b.tar", got)
	}
	// a's image is gone: a.tar again.
	st.set("docker.io/library/a.tar", "")
	if got := runOnce(t, dir, stateFile, st); !slices.Equal(got, []string{"a.tar"}) {
		t.Errorf("after a's image was removed, imported %v, want a.tar", got)
	}
	st.set("docker.io/library/a.tar", "sha256:a")
	// a.tar replaced by a copy with the same size and time (a new inode).
	fi, err := os.Stat(filepath.Join(dir, "a.tar"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".a.tar.new")
	write(t, tmp, "A")
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "a.tar")); err != nil {
		t.Fatal(err)
	}
	if got := runOnce(t, dir, stateFile, st); !slices.Equal(got, []string{"a.tar"}) {
		t.Errorf("after a.tar was replaced keeping its size and time, imported %v, want a.tar", got)
	}
	// The runtime cannot be asked: everything is imported.
	st.mu.Lock()
	st.fail = errors.New("containerd away")
	st.mu.Unlock()
	if got := runOnce(t, dir, stateFile, st); !slices.Equal(got, []string{"a.tar", "b.tar"}) {
		t.Errorf("with the digests unknown, imported %v, want both", got)
	}
	// A state file that is not ours is ignored, not fatal.
	st.mu.Lock()
	st.fail = nil
	st.mu.Unlock()
	write(t, stateFile, "{not json")
	if got := runOnce(t, dir, stateFile, st); !slices.Equal(got, []string{"a.tar", "b.tar"}) {
		t.Errorf("with a broken state file, imported %v, want both", got)
	}
	if got := runOnce(t, dir, stateFile, st); len(got) != 0 {
		t.Errorf("after the broken state file was rewritten, a restart imported %v", got)
	}
}

// An archive skipped at start as unchanged lets its image go at once, as
// an import does, while a later archive is still being imported.
func TestWatcherUnchangedLetsImageGo(t *testing.T) {
	dir, stateFile := t.TempDir(), filepath.Join(t.TempDir(), "state.json")
	write(t, filepath.Join(dir, "a.tar"), "a")
	names := map[string]string{"a.tar": "docker.io/library/busybox:1.36", "b.tar": "registry.k8s.io/etcd:3.6.5-0"}
	st := &fakeStore{digests: map[string]string{names["a.tar"]: "sha256:a", names["b.tar"]: "sha256:b"}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	first := New(Options{Dir: dir, Importer: heldImporter{names: names}, StateFile: stateFile, Digests: st.Digests})
	fctx, fcancel := context.WithCancel(ctx)
	go first.Run(fctx)
	<-first.Ready()
	fcancel()

	write(t, filepath.Join(dir, "b.tar"), "b")
	imp := heldImporter{names: names, hold: map[string]chan struct{}{"a.tar": make(chan struct{}), "b.tar": make(chan struct{})}}
	w := New(Options{Dir: dir, Importer: imp, StateFile: stateFile, Digests: st.Digests})
	go w.Run(ctx)
	// a.tar's import would block: it is not imported, and its image goes.
	if err := w.Wait(ctx, "busybox:1.36"); err != nil {
		t.Fatalf("the unchanged archive's image was not let go: %v", err)
	}
	select {
	case <-w.Ready():
		t.Fatal("the first pass ended while b.tar's import is held")
	default:
	}
	close(imp.hold["b.tar"])
	<-w.Ready()
}
