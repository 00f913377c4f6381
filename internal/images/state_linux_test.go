package images

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// stateID is what changes when the state file is written (atomicfile
// replaces it: a new inode, a new mtime). A test holds the first inode
// with a hard link, so that a replacement cannot reuse its number.
func stateID(t *testing.T, path string) [3]int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return [3]int64{int64(st.Ino), st.Mtim.Nano(), st.Ctim.Nano()}
}

// TestStateWrittenOnChange: the images state file is written when what it
// records changes, not when an archive is recorded again as it was (an
// image removed from the runtime and imported again from the same
// archive), nor by a restarted podvisor that finds it as it left it.
func TestStateWrittenOnChange(t *testing.T) {
	stateFile := filepath.Join(t.TempDir(), "images", "state.json")
	st := &fakeStore{digests: map[string]string{"docker.io/library/a.tar": "sha256:a"}}
	names := []string{"docker.io/library/a.tar"}
	v := version{size: 10, mtime: time.Unix(1_700_000_000, 5).In(time.FixedZone("x", 3600)), ino: 7}
	w := New(Options{Dir: t.TempDir(), Importer: newFake(), StateFile: stateFile, Digests: st.Digests})
	w.loadState()
	w.remember(t.Context(), "a.tar", v, names)
	if err := os.Link(stateFile, stateFile+".held"); err != nil {
		t.Fatal(err)
	}
	first := stateID(t, stateFile)
	for range 5 {
		w.remember(t.Context(), "a.tar", v, names)
	}
	if got := stateID(t, stateFile); got != first {
		t.Errorf("state rewritten with nothing changed: %v → %v", first, got)
	}

	// A restart that imports the same archive again writes nothing.
	w = New(Options{Dir: t.TempDir(), Importer: newFake(), StateFile: stateFile, Digests: st.Digests})
	w.loadState()
	w.remember(t.Context(), "a.tar", v, names)
	if got := stateID(t, stateFile); got != first {
		t.Errorf("state rewritten by a restart with nothing changed: %v → %v", first, got)
	}

	// A change is written.
	st.set("docker.io/library/a.tar", "sha256:new")
	w.remember(t.Context(), "a.tar", v, names)
	if got := stateID(t, stateFile); got == first {
		t.Error("state not written after the image's digest changed")
	}
}
