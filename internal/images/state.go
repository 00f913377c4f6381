package images

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/podvisor/podvisor/internal/atomicfile"
)

// digestTimeout bounds the look-up of an archive's images at start.
const digestTimeout = 30 * time.Second

// stateVersion is the format of the state file; a file of another version
// is ignored (every archive is imported again).
const stateVersion = 1

// stateFile is what the state file holds: the archives imported, each at
// the version it had and with the digest of every image it named.
type stateFile struct {
	Version  int                     `json:"version"`
	Archives map[string]archiveState `json:"archives"`
}

type archiveState struct {
	Size  int64             `json:"size"`
	MTime time.Time         `json:"mtime"`
	Ino   uint64            `json:"ino"`
	Image map[string]string `json:"images"` // name → target digest
}

// is reports whether the archive recorded is at version v (times compared
// as instants: one read back from JSON has another location).
func (a archiveState) is(v version) bool {
	return a.Size == v.size && a.MTime.Equal(v.mtime) && a.Ino == v.ino
}

// persists reports whether the Watcher keeps a state file.
func (w *Watcher) persists() bool { return w.opts.StateFile != "" && w.opts.Digests != nil }

// loadState reads the state file into w.known; a missing, unreadable or
// other-version file is an empty state (every archive is imported again),
// logged unless missing.
func (w *Watcher) loadState() {
	if !w.persists() {
		return
	}
	data, err := os.ReadFile(w.opts.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var st stateFile
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	if err == nil && st.Version != stateVersion {
		err = fmt.Errorf("version %d, not %d", st.Version, stateVersion)
	}
	if err != nil {
		w.log.Warn("images state ignored; every archive is imported again", "file", w.opts.StateFile, "err", err)
		return
	}
	maps.Copy(w.known, st.Archives)
	w.saved = data
}

// saveState writes the state file when its content changed (an archive
// imported again as it was, after its image was removed from the runtime
// say, writes nothing); a failure is logged (the archives are then
// imported again at the next start, nothing is lost).
func (w *Watcher) saveState() {
	if !w.persists() {
		return
	}
	data, err := json.Marshal(stateFile{Version: stateVersion, Archives: w.known})
	if err == nil && bytes.Equal(data, w.saved) {
		return
	}
	if err == nil {
		err = os.MkdirAll(filepath.Dir(w.opts.StateFile), 0o700)
	}
	if err == nil {
		err = atomicfile.Write(w.opts.StateFile, data, 0o600)
	}
	if err != nil {
		w.log.Warn("cannot save images state", "file", w.opts.StateFile, "err", err)
		return
	}
	w.saved = data
}

// unchanged reports whether archive name, at version v, is as it was when
// imported before and every image it named is still in the runtime with
// the digest it had then; such an archive need not be imported again. It
// returns the images' names.
func (w *Watcher) unchanged(ctx context.Context, name string, v version) ([]string, bool) {
	a, ok := w.known[name]
	if !ok || !a.is(v) || len(a.Image) == 0 {
		return nil, false
	}
	names := make([]string, 0, len(a.Image))
	for n := range a.Image {
		names = append(names, n)
	}
	dctx, cancel := context.WithTimeout(ctx, digestTimeout)
	defer cancel()
	have, err := w.opts.Digests(dctx, names)
	if err != nil {
		w.log.Warn("cannot look up an archive's images; importing it again", "file", name, "err", err)
		return nil, false
	}
	for n, d := range a.Image {
		if have[n] != d {
			return nil, false
		}
	}
	return names, true
}

// remember records archive name, imported at version v with images names,
// and saves the state.
func (w *Watcher) remember(ctx context.Context, name string, v version, names []string) {
	if !w.persists() {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, digestTimeout)
	defer cancel()
	have, err := w.opts.Digests(dctx, names)
	if err != nil || len(have) != len(names) {
		w.forget(name)
		return
	}
	w.known[name] = archiveState{Size: v.size, MTime: v.mtime, Ino: v.ino, Image: have}
	w.saveState()
}

// forget drops archive name from the state, saving it when it was there.
func (w *Watcher) forget(name string) {
	if _, ok := w.known[name]; ok {
		delete(w.known, name)
		w.saveState()
	}
}
