package manifest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
	"time"

	"github.com/podvisor/podvisor/internal/inotify"
	"github.com/podvisor/podvisor/test/syncbuf"
)

// named returns basePod with another metadata.name.
func named(name string) string {
	return strings.Replace(basePod, "name: web", "name: "+name, 1)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAtomic replaces path the way careful tools do: a temporary dotfile
// renamed over the target.
func writeAtomic(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func keys(s Snapshot) []string {
	var k []string
	for _, p := range s.Pods {
		k = append(k, p.Key())
	}
	return k
}

// --- scanner: the single step the Source loop runs -----------------------

func TestScanLastKnownGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	sc := newScanner(dir, node, slog.New(slog.DiscardHandler))

	writeFile(t, path, basePod)
	good, changed := rescan(sc)
	if !changed || len(good.Pods) != 1 || good.Pods[0].Err != nil {
		t.Fatalf("first scan: changed=%v %+v", changed, good)
	}
	first := good.Pods[0]

	if _, changed := rescan(sc); changed {
		t.Errorf("rescan of an unchanged directory reported a change")
	}

	writeFile(t, path, basePod+"    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n")
	bad, changed := rescan(sc)
	if !changed || len(bad.Pods) != 1 || len(bad.Errors) != 1 {
		t.Fatalf("invalid edit: changed=%v pods=%v errors=%v", changed, keys(bad), bad.Errors)
	}
	kept := bad.Pods[0]
	if kept.Hash != first.Hash || kept.Err == nil || !errors.Is(kept.Err, ErrInvalid) {
		t.Errorf("kept pod: hash %s (want %s), Err %v", kept.Hash, first.Hash, kept.Err)
	}
	if first.Err != nil {
		t.Errorf("the pod handed out earlier was mutated")
	}
	if _, changed := rescan(sc); changed {
		t.Errorf("rescan with the same error reported a change")
	}

	writeFile(t, path, strings.Replace(basePod, "busybox:1.36", "busybox:1.37", 1))
	fixed, _ := rescan(sc)
	if len(fixed.Pods) != 1 || fixed.Pods[0].Err != nil || fixed.Pods[0].Hash == first.Hash || len(fixed.Errors) != 0 {
		t.Errorf("after fix: %+v errors %v", fixed.Pods, fixed.Errors)
	}

	// A file invalid from the start has no last good pods.
	writeFile(t, filepath.Join(dir, "new.yaml"), "kind: Pod\n")
	s, _ := rescan(sc)
	if !slices.Equal(keys(s), []string{"default/web-node-1"}) || len(s.Errors) != 1 {
		t.Errorf("pods %v errors %v", keys(s), s.Errors)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s, _ = rescan(sc)
	if len(s.Pods) != 0 {
		t.Errorf("removed file still has pods: %v", keys(s))
	}
}

func TestScanKeepsPodObjectsOfUnchangedFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), named("a"))
	sc := newScanner(dir, node, slog.New(slog.DiscardHandler))
	s1, _ := rescan(sc)
	writeFile(t, filepath.Join(dir, "b.yaml"), named("b"))
	s2, _ := rescan(sc)
	if s1.Pods[0] != s2.Pods[0] {
		t.Errorf("unchanged a.yaml yielded a new *Pod (config.seen would move)")
	}
}

func TestScanDuplicates(t *testing.T) {
	dir := t.TempDir()
	sc := newScanner(dir, node, slog.New(slog.DiscardHandler))

	// Both present at the first scan: the file that sorts first wins.
	writeFile(t, filepath.Join(dir, "b.yaml"), basePod)
	writeFile(t, filepath.Join(dir, "c.yaml"), basePod+"  hostname: c\n")
	s, _ := rescan(sc)
	if len(s.Pods) != 1 || s.Pods[0].Path != filepath.Join(dir, "b.yaml") {
		t.Fatalf("pods %+v", s.Pods)
	}
	if len(s.Errors) != 1 || !errors.Is(s.Errors[0], ErrDuplicate) ||
		!strings.Contains(s.Errors[0].Error(), "c.yaml") || !strings.Contains(s.Errors[0].Error(), "also defined in "+filepath.Join(dir, "b.yaml")) {
		t.Errorf("errors %v, want one naming both files", s.Errors)
	}

	// A newcomer that sorts first does not displace the running pod.
	writeFile(t, filepath.Join(dir, "a.yaml"), basePod+"  hostname: a\n")
	s, _ = rescan(sc)
	if len(s.Pods) != 1 || s.Pods[0].Path != filepath.Join(dir, "b.yaml") || len(s.Errors) != 2 {
		t.Errorf("pods %+v errors %v", s.Pods, s.Errors)
	}

	// When the winner goes, the first of the others takes over.
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	s, _ = rescan(sc)
	if len(s.Pods) != 1 || s.Pods[0].Path != filepath.Join(dir, "a.yaml") || len(s.Errors) != 1 {
		t.Errorf("pods %+v errors %v", s.Pods, s.Errors)
	}
}

// logBuffer is a slog handler target safe for concurrent use.
type logBuffer = syncbuf.Buffer

func TestScanLogsOnce(t *testing.T) {
	dir := t.TempDir()
	var logs logBuffer
	sc := newScanner(dir, node, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	writeFile(t, filepath.Join(dir, "bad.yaml"), basePod+"    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n")
	writeFile(t, filepath.Join(dir, "warn.yaml"), named("w")+"  tolerations: [{operator: Exists}]\n")
	writeFile(t, filepath.Join(dir, "web.yaml.swp"), "junk")
	writeFile(t, filepath.Join(dir, "notes.conf"), "junk")
	for range 3 {
		rescan(sc)
	}
	out := logs.String()
	for _, want := range []string{"spec.containers[0].volumeDevices", "spec.tolerations", "web.yaml.swp", "notes.conf"} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, out)
		}
	}
	if !strings.Contains(out, "editor swap file") || !strings.Contains(out, "not a manifest extension") {
		t.Errorf("skip reasons not logged:\n%s", out)
	}
}

func TestScanUnreadableDirectoryKeepsPods(t *testing.T) {
	if os.Geteuid() == 0 {
		// root reads any directory; replace the directory by a file instead.
		dir := filepath.Join(t.TempDir(), "m")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "web.yaml"), basePod)
		sc := newScanner(dir, node, slog.New(slog.DiscardHandler))
		rescan(sc)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "not a directory")
		s, _ := rescan(sc)
		if len(s.Pods) != 1 || s.Pods[0].Err == nil || len(s.Errors) != 1 || errors.Is(s.Errors[0], ErrInvalid) {
			t.Errorf("pods %+v errors %v: want the last good pod kept with an I/O error", s.Pods, s.Errors)
		}
		return
	}
	prereq.Missing(t, "root (to replace the directory deterministically)")
}

// --- Source: real inotify ----------------------------------------------------

// runSource starts a Source on dir with a relist period far beyond the test,
// so every change must arrive through inotify.
func runSource(t *testing.T, dir string) (<-chan Snapshot, func() error) {
	t.Helper()
	src := NewSource(SourceOptions{
		Dir:          dir,
		NodeName:     node,
		Log:          slog.New(slog.DiscardHandler),
		RelistPeriod: time.Hour,
		Debounce:     20 * time.Millisecond,
	})
	return startSource(t, src)
}

// startSource runs src until the test ends (or stop is called) and checks
// that Run then returns context.Canceled.
func startSource(t *testing.T, src *Source) (<-chan Snapshot, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan Snapshot)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, out) }()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			return fmt.Errorf("Run did not return after cancel")
		}
	})
	t.Cleanup(func() {
		if err := stop(); !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	return out, stop
}

// waitFor reads snapshots until cond holds or the deadline passes.
func waitFor(t *testing.T, out <-chan Snapshot, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.After(5 * time.Second)
	var last Snapshot
	for {
		select {
		case s := <-out:
			if cond(s) {
				return s
			}
			last = s
		case <-deadline:
			t.Fatalf("timed out waiting for %s; last snapshot: pods %v errors %v", what, keys(last), last.Errors)
		}
	}
}

func hasPods(want ...string) func(Snapshot) bool {
	return func(s Snapshot) bool { return slices.Equal(keys(s), want) }
}

func TestSourceLifecycle(t *testing.T) {
	dir := t.TempDir()
	out, stop := runSource(t, dir)
	path := filepath.Join(dir, "web.yaml")

	waitFor(t, out, "first (empty) snapshot", func(s Snapshot) bool { return len(s.Pods) == 0 && len(s.Errors) == 0 })

	writeFile(t, path, basePod)
	created := waitFor(t, out, "pod created", hasPods("default/web-node-1"))

	writeFile(t, path, strings.Replace(basePod, "busybox:1.36", "busybox:1.37", 1))
	modified := waitFor(t, out, "pod modified", func(s Snapshot) bool {
		return len(s.Pods) == 1 && s.Pods[0].Hash != created.Pods[0].Hash
	})
	if img := modified.Pods[0].Pod.Spec.Containers[0].Image; img != "busybox:1.37" {
		t.Errorf("image %q", img)
	}

	// An invalid edit keeps the last good pod, marked, with the error.
	writeFile(t, path, basePod+"    lifecycle: {}\n  bogus: 1\n")
	bad := waitFor(t, out, "invalid edit", func(s Snapshot) bool {
		return len(s.Errors) > 0 && strings.Contains(s.Errors[0].Error(), "bogus")
	})
	if len(bad.Pods) != 1 || bad.Pods[0].Hash != modified.Pods[0].Hash || bad.Pods[0].Err == nil {
		t.Errorf("after invalid edit: pods %+v", bad.Pods)
	}
	if !strings.Contains(bad.Errors[0].Error(), "web.yaml:10: spec.bogus: unknown field") {
		t.Errorf("error %v", bad.Errors[0])
	}

	// Atomic replace through a dotfile rename.
	writeAtomic(t, path, named("api"))
	waitFor(t, out, "atomic replace", func(s Snapshot) bool {
		return hasPods("default/api-node-1")(s) && s.Pods[0].Err == nil && len(s.Errors) == 0
	})

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "pod deleted", hasPods())

	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}

func TestSourceIgnoresJunk(t *testing.T) {
	dir := t.TempDir()
	out, _ := runSource(t, dir)
	waitFor(t, out, "first snapshot", hasPods())

	for _, name := range []string{".web.yaml", "web.yaml~", ".web.yaml.swp", "web.yaml.swx", "4913", "web.yaml.bak",
		"web.yaml.dpkg-new", "web.yaml.rpmnew", "web.txt", "web.yaml.tmp"} {
		writeFile(t, filepath.Join(dir, name), named("junk"))
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub.yaml", "inner.yaml"), named("junk"))
	writeFile(t, filepath.Join(dir, "z-real.yaml"), named("real"))

	s := waitFor(t, out, "the real pod", func(s Snapshot) bool { return len(s.Pods) > 0 })
	if !slices.Equal(keys(s), []string{"default/real-node-1"}) || len(s.Errors) != 0 {
		t.Errorf("pods %v errors %v, want only the real pod", keys(s), s.Errors)
	}
}

func TestSourceDirectoryCreatedLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	out, _ := runSource(t, dir)
	waitFor(t, out, "first (empty) snapshot of a missing directory", hasPods())

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "web.yaml"), basePod)
	waitFor(t, out, "pod in the new directory", hasPods("default/web-node-1"))

	// Files written after the directory appeared are watched too.
	writeFile(t, filepath.Join(dir, "db.yaml"), named("db"))
	waitFor(t, out, "second pod", hasPods("default/db-node-1", "default/web-node-1"))

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "directory removed", hasPods())

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "web.yaml"), basePod)
	waitFor(t, out, "directory recreated", hasPods("default/web-node-1"))
}

func TestSourceDuplicates(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.yaml"), basePod)
	out, _ := runSource(t, dir)
	first := waitFor(t, out, "first snapshot", hasPods("default/web-node-1"))

	writeFile(t, filepath.Join(dir, "a.yaml"), basePod+"  hostname: other\n")
	s := waitFor(t, out, "duplicate error", func(s Snapshot) bool {
		return len(s.Errors) == 1 && errors.Is(s.Errors[0], ErrDuplicate)
	})
	if len(s.Pods) != 1 || s.Pods[0].Hash != first.Pods[0].Hash {
		t.Errorf("the running pod from b.yaml was displaced: %+v", s.Pods)
	}
	if msg := s.Errors[0].Error(); !strings.HasPrefix(msg, filepath.Join(dir, "a.yaml")) || !strings.Contains(msg, filepath.Join(dir, "b.yaml")) {
		t.Errorf("error %q should name a.yaml and b.yaml", msg)
	}

	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, out, "a.yaml takes over", func(s Snapshot) bool { return len(s.Errors) == 0 })
	if len(s.Pods) != 1 || s.Pods[0].Path != filepath.Join(dir, "a.yaml") {
		t.Errorf("pods %+v", s.Pods)
	}
}

func TestSourceRelist(t *testing.T) {
	// The watch loses every event of the directory's entries (as after
	// an overflow nobody reported, or on a filesystem whose changes
	// inotify does not see): only the relist can find a new file, and a
	// changed one. Set RelistPeriod to an hour and this fails.
	dir := t.TempDir()
	src := NewSource(SourceOptions{
		Dir:          dir,
		NodeName:     node,
		RelistPeriod: 50 * time.Millisecond,
	})
	var lost atomic.Int64
	src.watch = func(ctx context.Context, opts inotify.Options, handle func(inotify.Event), step func(time.Time) (time.Time, error)) error {
		return inotify.Watch(ctx, opts, func(ev inotify.Event) {
			if ev.Name != "" {
				lost.Add(1)
				return
			}
			handle(ev)
		}, step)
	}
	out := make(chan Snapshot)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, out) }()
	defer func() {
		cancel()
		<-done
	}()
	waitFor(t, out, "first snapshot", hasPods())
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	waitFor(t, out, "relisted new pod", hasPods("default/web-node-1"))
	writeFile(t, path, named("db"))
	waitFor(t, out, "relisted changed pod", hasPods("default/db-node-1"))
	if lost.Load() == 0 {
		t.Fatal("no event was lost: the test proves nothing about the relist")
	}
}

// rescan reads every file, as the first scan and a scan after an inotify
// overflow do; the scanner tests that are not about events use it.
func rescan(sc *scanner) (Snapshot, bool) {
	sc.resetEvents()
	return sc.scan(scanRelist)
}

func TestNewSourceDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   SourceOptions
		want SourceOptions
	}{
		{"zero", SourceOptions{Dir: "/m"},
			SourceOptions{Dir: "/m", RelistPeriod: DefaultRelistPeriod, Debounce: DefaultDebounce, QuickDebounce: DefaultQuickDebounce}},
		{"set", SourceOptions{Dir: "/m", RelistPeriod: time.Minute, Debounce: time.Second, QuickDebounce: 50 * time.Millisecond},
			SourceOptions{Dir: "/m", RelistPeriod: time.Minute, Debounce: time.Second, QuickDebounce: 50 * time.Millisecond}},
		{"quick never slower than the debounce", SourceOptions{Dir: "/m", Debounce: 2 * time.Millisecond},
			SourceOptions{Dir: "/m", RelistPeriod: DefaultRelistPeriod, Debounce: 2 * time.Millisecond, QuickDebounce: 2 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewSource(tt.in).opts
			if got.Log == nil {
				t.Error("no logger: want one that discards")
			}
			got.Log = nil
			if got != tt.want {
				t.Errorf("options %+v, want %+v", got, tt.want)
			}
		})
	}
}
