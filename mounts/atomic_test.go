package mounts

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readVolume reads every user-visible file of a volume root through its
// symlinks, by relative path.
func readVolume(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		root := filepath.Join(dir, e.Name())
		err := filepath.WalkDir(root+"/", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
			return nil
		})
		if err != nil {
			// A plain file behind the symlink.
			b, err := os.ReadFile(root)
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = string(b)
		}
	}
	return out
}

func TestWriteAtomicLayoutSwapAndRemoval(t *testing.T) {
	dir := t.TempDir()
	changed, err := writeAtomic(dir, Files{
		"a":       {Data: []byte("1"), Mode: 0o644},
		"b":       {Data: []byte("1"), Mode: 0o400},
		"sub/c":   {Data: []byte("c"), Mode: 0o600},
		"gone/x":  {Data: []byte("x"), Mode: 0o644},
		"sub/old": {Data: []byte("o"), Mode: 0o644},
	}, nil)
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, err %v", changed, err)
	}
	ts1, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(ts1, "..20") {
		t.Fatalf("..data -> %q, %v; want a timestamped directory", ts1, err)
	}
	for _, name := range []string{"a", "b", "sub", "gone"} {
		l, err := os.Readlink(filepath.Join(dir, name))
		if err != nil || l != "..data/"+name {
			t.Errorf("%s -> %q, %v; want ..data/%s", name, l, err, name)
		}
	}
	for path, want := range map[string]fs.FileMode{"a": 0o644, "b": 0o400, "sub/c": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, path))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, err %v; want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, ts1)); fi.Mode().Perm() != 0o755 {
		t.Errorf("version directory mode %v, want 0755", fi.Mode().Perm())
	}

	// Same content: nothing is written, the version stays.
	changed, err = writeAtomic(dir, Files{
		"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("1"), Mode: 0o400},
		"sub/c": {Data: []byte("c"), Mode: 0o600}, "gone/x": {Data: []byte("x"), Mode: 0o644}, "sub/old": {Data: []byte("o"), Mode: 0o644},
	}, nil)
	if err != nil || changed {
		t.Fatalf("unchanged write: changed %v, err %v", changed, err)
	}
	if ts, _ := os.Readlink(filepath.Join(dir, "..data")); ts != ts1 {
		t.Errorf("an unchanged write swapped ..data to %s", ts)
	}

	// A key dropped (gone/x, sub/old) is removed with its top-level link;
	// a changed one swaps the version.
	perms := 0
	changed, err = writeAtomic(dir, Files{
		"a":     {Data: []byte("2"), Mode: 0o644},
		"b":     {Data: []byte("2"), Mode: 0o400},
		"sub/c": {Data: []byte("c"), Mode: 0o600},
		"new":   {Data: []byte("n"), Mode: 0o644},
	}, func() error {
		perms++
		// setPerms runs before the swap: the old version is still visible.
		if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "1" {
			t.Errorf("setPerms ran after the swap: a = %q", b)
		}
		return nil
	})
	if err != nil || !changed || perms != 1 {
		t.Fatalf("update: changed %v, err %v, setPerms ran %d times", changed, err, perms)
	}
	got := readVolume(t, dir)
	want := map[string]string{"a": "2", "b": "2", "sub/c": "c", "new": "n"}
	if len(got) != len(want) {
		t.Errorf("files %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "gone")); err == nil {
		t.Error("the link of a dropped key is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, ts1)); err == nil {
		t.Error("the old version directory is still there")
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if len(names) != 6 || !strings.HasPrefix(names[0], "..20") || !slices.Contains(names, "..data") {
		t.Errorf("volume root holds %v; want one version, ..data and the four links", names)
	}

	// Dropping everything leaves an empty version and no links.
	if _, err := writeAtomic(dir, Files{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := readVolume(t, dir); len(got) != 0 {
		t.Errorf("files left after an empty write: %v", got)
	}
}

func TestWriteAtomicRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "a/../b", "..x", "../a", strings.Repeat("n", 256)} {
		if _, err := writeAtomic(t.TempDir(), Files{p: {Data: []byte("x"), Mode: 0o644}}, nil); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

// A reader opening the files through the volume while versions are swapped
// sees two keys written together always equal.
func TestWriteAtomicReaderSeesWholeVersions(t *testing.T) {
	dir := t.TempDir()
	write := func(v string) {
		if _, err := writeAtomic(dir, Files{"a": {Data: []byte(v), Mode: 0o644}, "b": {Data: []byte(v), Mode: 0o644}}, nil); err != nil {
			t.Error(err)
		}
	}
	write("0")
	done := make(chan struct{})
	mixed := make(chan string, 1)
	go func() {
		defer close(mixed)
		for {
			select {
			case <-done:
				return
			default:
			}
			// Open both through one resolution of ..data, as a reader
			// that opens the directory first does.
			d, err := os.Open(filepath.Join(dir, "..data") + "/")
			if err != nil {
				continue
			}
			a, errA := readAt(d, "a")
			b, errB := readAt(d, "b")
			d.Close()
			if errA == nil && errB == nil && a != b {
				mixed <- a + "/" + b
				return
			}
		}
	}()
	for i := 1; i < 300; i++ {
		write(strings.Repeat("v", i))
	}
	close(done)
	if m, ok := <-mixed; ok {
		t.Errorf("a reader saw a mixed version: %s", m)
	}
}

func readAt(d *os.File, name string) (string, error) {
	b, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + name)
	return string(b), err
}
