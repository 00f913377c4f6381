package manifest

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Source tests with real inotify for the atomic-read rules and the life of
// the directory. Each waits with a deadline (waitFor) or, where it must show
// that nothing happens while a writer holds a file open, reads snapshots
// for a bounded time (expectNone).

// expectNone reads snapshots for d and fails on any for which bad holds.
// It is only for "nothing may happen while the writer is busy": the writer
// holds its file open for d, and every relist in that time must keep quiet.
func expectNone(t *testing.T, out <-chan Snapshot, d time.Duration, what string, bad func(Snapshot) bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case s := <-out:
			if bad(s) {
				t.Fatalf("%s: pods %v errors %v", what, keys(s), s.Errors)
			}
		case <-deadline:
			return
		}
	}
}

// podOf returns the pod with key k in s, or nil.
func podOf(s Snapshot, k string) *Pod {
	for _, p := range s.Pods {
		if p.Key() == k {
			return p
		}
	}
	return nil
}

// fastSource is a Source whose relist runs many times during a test, so the
// test shows that relists do not break the rules either.
func fastSource(dir string) *Source {
	return NewSource(SourceOptions{
		Dir:          dir,
		NodeName:     node,
		Log:          slog.New(slog.DiscardHandler),
		RelistPeriod: 30 * time.Millisecond,
		Debounce:     10 * time.Millisecond,
	})
}

func TestSourceSlowWriter(t *testing.T) {
	const hold = 600 * time.Millisecond // "a second apart", shortened; ~20 relists

	t.Run("new file", func(t *testing.T) {
		dir := t.TempDir()
		out, _ := startSource(t, fastSource(dir))
		waitFor(t, out, "first snapshot", hasPods())

		f, err := os.Create(filepath.Join(dir, "web.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// The first half is a complete pod on its own: read early, it would run.
		if _, err := f.WriteString(basePod); err != nil {
			t.Fatal(err)
		}
		expectNone(t, out, hold, "a file still open for writing was read", func(s Snapshot) bool {
			return len(s.Pods) > 0 || len(s.Errors) > 0
		})
		if _, err := f.WriteString("  hostname: complete\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		s := waitFor(t, out, "the complete pod", hasPods("default/web-node-1"))
		if h := s.Pods[0].Pod.Spec.Hostname; h != "complete" {
			t.Errorf("hostname %q: the pod was read before its writer closed the file", h)
		}
	})

	t.Run("rewrite in place keeps the old pod until close", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "web.yaml")
		writeFile(t, path, basePod)
		out, _ := startSource(t, fastSource(dir))
		first := waitFor(t, out, "first snapshot", hasPods("default/web-node-1"))
		uid := first.Pods[0].Hash

		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("apiVersion: v1\nkind: Pod\n"); err != nil {
			t.Fatal(err)
		}
		expectNone(t, out, hold, "a half-written file changed the running pod", func(s Snapshot) bool {
			p := podOf(s, "default/web-node-1")
			return p == nil || p.Hash != uid || p.Err != nil || len(s.Errors) > 0
		})
		if _, err := f.WriteString(strings.TrimPrefix(strings.Replace(basePod, "1.36", "1.37", 1), "apiVersion: v1\nkind: Pod\n")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		s := waitFor(t, out, "the new version", func(s Snapshot) bool {
			p := podOf(s, "default/web-node-1")
			return p != nil && p.Hash != uid
		})
		if len(s.Errors) != 0 || s.Pods[0].Pod.Spec.Containers[0].Image != "busybox:1.37" {
			t.Errorf("pods %+v errors %v", s.Pods, s.Errors)
		}
	})
}

func TestSourceRenameIntoPlaceAndAway(t *testing.T) {
	dir := t.TempDir()
	staging := t.TempDir() // same file system
	out, _ := runSource(t, dir)
	waitFor(t, out, "first snapshot", hasPods())

	writeFile(t, filepath.Join(staging, "web.yaml"), basePod)
	if err := os.Rename(filepath.Join(staging, "web.yaml"), filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "renamed in", hasPods("default/web-node-1"))

	// Renamed to a name the directory ignores: a delete.
	if err := os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "web.yaml.bak")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "renamed to a backup name", hasPods())

	// And back: an add.
	if err := os.Rename(filepath.Join(dir, "web.yaml.bak"), filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "renamed back", hasPods("default/web-node-1"))

	// Renamed out of the directory: a delete.
	if err := os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(staging, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "renamed away", hasPods())
}

// barrier writes another manifest and waits for the snapshot that has it:
// the events before it have been handled by then. It checks every snapshot
// on the way with ok.
func barrier(t *testing.T, out <-chan Snapshot, dir string, ok func(Snapshot) bool) Snapshot {
	t.Helper()
	writeFile(t, filepath.Join(dir, "zz-barrier.yaml"), named("barrier"))
	return waitFor(t, out, "the barrier pod", func(s Snapshot) bool {
		if !ok(s) {
			t.Fatalf("unexpected snapshot: pods %v errors %v", keys(s), s.Errors)
		}
		return podOf(s, "default/barrier-node-1") != nil
	})
}

func TestSourceSameMeaningRestartsNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	src := NewSource(SourceOptions{
		Dir:          dir,
		NodeName:     node,
		RelistPeriod: time.Hour,
		Debounce:     300 * time.Millisecond, // the window a delete has to be undone in
	})
	out, _ := startSource(t, src)
	first := waitFor(t, out, "first snapshot", hasPods("default/web-node-1"))
	orig := first.Pods[0]
	same := func(s Snapshot) bool {
		p := podOf(s, "default/web-node-1")
		return p != nil && p.Hash == orig.Hash && p.Err == nil && len(s.Errors) == 0
	}

	// Deleted and written again with the same content within the debounce.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, basePod)
	s := barrier(t, out, dir, same)
	if p := podOf(s, "default/web-node-1"); p != orig {
		t.Errorf("a new *Pod for the same content (config.seen %s -> %s)",
			orig.Pod.Annotations[AnnotationConfigSeen], p.Pod.Annotations[AnnotationConfigSeen])
	}

	// Reformatted: comments, key order, quoting, flow style.
	writeAtomic(t, path, "# the web server\nkind: \"Pod\"\nspec: {containers: [{image: 'busybox:1.36', name: app}]}\nmetadata:\n  name: web # same\napiVersion: v1\n")
	if err := os.Remove(filepath.Join(dir, "zz-barrier.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "barrier removed", func(s Snapshot) bool {
		if !same(s) {
			t.Fatalf("reformatting changed the pod: %+v", s.Pods)
		}
		return len(s.Pods) == 1
	})
}

func TestSourceDataSymlinkSwap(t *testing.T) {
	// Kubernetes' AtomicWriter (ConfigMap volumes, and tools that copy it):
	// files are symlinks into ..data, a symlink to a timestamped directory
	// that is swapped by renaming a new symlink over it.
	dir := t.TempDir()
	version := func(ts, image string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, ts, "web.yaml"), strings.Replace(basePod, "busybox:1.36", image, 1))
	}
	version("..2025_01_01", "busybox:1.36")
	if err := os.Symlink("..2025_01_01", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/web.yaml", filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	out, _ := runSource(t, dir)
	first := waitFor(t, out, "first snapshot", hasPods("default/web-node-1"))
	if img := first.Pods[0].Pod.Spec.Containers[0].Image; img != "busybox:1.36" {
		t.Fatalf("image %q", img)
	}

	version("..2025_01_02", "busybox:1.37")
	if err := os.Symlink("..2025_01_02", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "..2025_01_01")); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, out, "the swapped version", func(s Snapshot) bool {
		return len(s.Pods) == 1 && s.Pods[0].Pod.Spec.Containers[0].Image == "busybox:1.37"
	})
	if len(s.Errors) != 0 || s.Pods[0].Path != filepath.Join(dir, "web.yaml") {
		t.Errorf("path %s errors %v", s.Pods[0].Path, s.Errors)
	}

	// A new symlinked manifest appears with the next swap.
	version("..2025_01_03", "busybox:1.37")
	writeFile(t, filepath.Join(dir, "..2025_01_03", "db.yaml"), named("db"))
	if err := os.Symlink("..2025_01_03", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/db.yaml", filepath.Join(dir, "db.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "the new symlinked manifest", hasPods("default/db-node-1", "default/web-node-1"))
}

func TestSourceDirectorySymlinkSwap(t *testing.T) {
	parent := t.TempDir()
	for _, d := range []string{"v1", "v2"} {
		if err := os.Mkdir(filepath.Join(parent, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(parent, "v1", "a.yaml"), named("a"))
	writeFile(t, filepath.Join(parent, "v2", "b.yaml"), named("b"))
	dir := filepath.Join(parent, "manifests")
	if err := os.Symlink("v1", dir); err != nil {
		t.Fatal(err)
	}
	out, _ := runSource(t, dir)
	waitFor(t, out, "first snapshot", hasPods("default/a-node-1"))

	// The directory itself is swapped atomically.
	if err := os.Symlink("v2", filepath.Join(parent, ".manifests.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(parent, ".manifests.tmp"), dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "the new directory's pods", hasPods("default/b-node-1"))

	// The watch follows: changes in the new directory arrive, changes in
	// the old one do not matter.
	writeFile(t, filepath.Join(parent, "v1", "old.yaml"), named("old"))
	writeFile(t, filepath.Join(parent, "v2", "c.yaml"), named("c"))
	s := waitFor(t, out, "a file in the new directory", func(s Snapshot) bool { return podOf(s, "default/c-node-1") != nil })
	if !hasPods("default/b-node-1", "default/c-node-1")(s) {
		t.Errorf("pods %v", keys(s))
	}
}

func TestSourcePermissionWarnings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	src := NewSource(SourceOptions{
		Dir:           dir,
		NodeName:      node,
		RelistPeriod:  time.Hour,
		Debounce:      20 * time.Millisecond,
		TrustedUID:    os.Geteuid(),
		AllowInsecure: true,
	})
	out, _ := startSource(t, src)
	first := waitFor(t, out, "first snapshot", hasPods("default/web-node-1"))
	if len(first.Warnings) != 0 {
		t.Fatalf("warnings %v", first.Warnings)
	}

	// chmod is an IN_ATTRIB: a rescan, a warning, and the same pod.
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, out, "a permission warning", func(s Snapshot) bool { return len(s.Warnings) == 1 })
	if w := s.Warnings[0]; w.Path != path || !strings.Contains(w.Reason, "mode 0666 is group- or world-writable") {
		t.Errorf("warning %v", w)
	}
	if p := podOf(s, "default/web-node-1"); p == nil || p != first.Pods[0] {
		t.Errorf("a chmod changed the pod")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "the warning gone", func(s Snapshot) bool { return len(s.Warnings) == 0 })
}

func TestSourcePersistsLastKnownGood(t *testing.T) {
	dir, stateDir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, basePod)
	newSrc := func() *Source {
		src := NewSource(SourceOptions{
			Dir:          dir,
			NodeName:     node,
			RelistPeriod: time.Hour,
			Debounce:     20 * time.Millisecond,
			StateDir:     stateDir,
		})
		return src
	}
	out, stop := startSource(t, newSrc())
	good := waitFor(t, out, "first snapshot", hasPods("default/web-node-1"))
	writeFile(t, path, basePod+"    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n")
	waitFor(t, out, "invalid edit", func(s Snapshot) bool { return len(s.Errors) == 1 })
	_ = stop()

	// podvisor restarts (or the machine reboots) with the file still broken.
	out, _ = startSource(t, newSrc())
	s := waitFor(t, out, "first snapshot after restart", func(Snapshot) bool { return true })
	if len(s.Pods) != 1 || s.Pods[0].Hash != good.Pods[0].Hash || s.Pods[0].Err == nil {
		t.Fatalf("after restart: pods %+v, want the last good pod %s marked with the error", s.Pods, good.Pods[0].Hash)
	}
	if len(s.Errors) != 1 || !strings.Contains(s.Errors[0].Error(), "web.yaml:9: spec.containers[0].volumeDevices") {
		t.Errorf("errors %v", s.Errors)
	}
}
