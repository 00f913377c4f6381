package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Load reads a whole directory once (the same code path the Source uses). A
// directory that does not exist is an empty set.
func Load(dir, nodeName string) Snapshot {
	snap, _ := newScanner(dir, nodeName, slog.New(slog.DiscardHandler)).scan()
	return snap
}

// manifestExts are the file extensions read as manifests.
var manifestExts = []string{".yaml", ".yml", ".json", ".manifest"}

// skipReason says why a directory entry is not a manifest, or "" when it is
// one. Editors, package managers and atomic writers leave such files next to
// manifests; none of them may ever become a pod (DESIGN invariant 1).
func skipReason(name string) string {
	switch {
	case strings.HasPrefix(name, "."):
		return "dotfile"
	case strings.HasSuffix(name, "~"):
		return "editor backup file"
	case hasAnySuffix(name, ".swp", ".swx"):
		return "editor swap file"
	case hasAnySuffix(name, ".bak", ".orig", ".tmp"):
		return "backup or temporary file"
	case strings.Contains(name, ".dpkg-"), strings.Contains(name, ".rpm"):
		return "package manager file"
	case strings.Trim(name, "0123456789") == "":
		return "digit-only name (editor temporary file)"
	case !hasAnySuffix(name, manifestExts...):
		return "not a manifest extension (.yaml, .yml, .json, .manifest)"
	}
	return ""
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}

// scanner reads the directory and builds snapshots; it remembers the last
// good pods of every file and what it has logged. It is owned by one
// goroutine.
type scanner struct {
	dir      string
	nodeName string
	log      *slog.Logger
	now      func() time.Time

	lastGood map[string][]*Pod // file path -> pods of its last valid parse
	prev     *Snapshot         // last built snapshot, nil before the first scan
	prevKeys map[string]*Pod   // namespace/name -> pod in prev

	skipped     map[string]string // entry name -> reason already logged
	loggedErrs  map[string]bool   // FileError texts logged and still present
	loggedWarns map[string]bool   // UIDs whose warnings were logged
}

func newScanner(dir, nodeName string, log *slog.Logger) *scanner {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &scanner{
		dir:         filepath.Clean(dir),
		nodeName:    nodeName,
		log:         log,
		now:         time.Now,
		lastGood:    map[string][]*Pod{},
		prevKeys:    map[string]*Pod{},
		skipped:     map[string]string{},
		loggedErrs:  map[string]bool{},
		loggedWarns: map[string]bool{},
	}
}

// scan reads the directory and returns the full desired set, and whether it
// differs from the previous scan's set of (UID, Err-ness) and Errors (always
// true for the first scan).
func (s *scanner) scan() (Snapshot, bool) {
	var (
		cands []*Pod
		errs  []*FileError
	)
	entries, readErr := os.ReadDir(s.dir)
	switch {
	case errors.Is(readErr, fs.ErrNotExist):
		// Not created yet, or removed: no pods. The Source watches the parent.
		clear(s.lastGood)
		entries = nil
	case readErr != nil:
		// An unreadable directory is not a removed one: keep every last good
		// pod running, marked with the error.
		fe := &FileError{Path: s.dir, Reason: "read directory: " + readErr.Error(), Err: readErr}
		errs = append(errs, fe)
		for _, path := range slices.Sorted(maps.Keys(s.lastGood)) {
			cands = append(cands, withErr(s.lastGood[path], fe)...)
		}
		entries = nil
	}

	present := map[string]bool{}
	seenNames := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		seenNames[name] = true
		if reason := skipReason(name); reason != "" {
			s.logSkip(name, reason)
			continue
		}
		path := filepath.Join(s.dir, name)
		info, err := os.Stat(path) // follows symlinks
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s.logSkip(name, "dangling symlink or removed while reading")
			continue
		case err != nil:
			errs = append(errs, &FileError{Path: path, Reason: "stat: " + err.Error(), Err: err})
			present[path] = true
			cands = append(cands, withErr(s.lastGood[path], errs[len(errs)-1])...)
			continue
		case info.IsDir():
			s.logSkip(name, "directory (subdirectories are not read)")
			continue
		case !info.Mode().IsRegular():
			s.logSkip(name, "not a regular file")
			continue
		}
		delete(s.skipped, name)

		pods, ferrs, gone := s.readFile(path, info)
		if gone {
			continue
		}
		present[path] = true
		if len(ferrs) > 0 {
			errs = append(errs, ferrs...)
			cands = append(cands, withErr(s.lastGood[path], ferrs[0])...)
			continue
		}
		// Keep the pod objects of an unchanged document, so consumers see the
		// same *Pod (and config.seen) until the content really changes.
		old := map[string]*Pod{}
		for _, p := range s.lastGood[path] {
			old[p.Hash] = p
		}
		for i, p := range pods {
			if o, ok := old[p.Hash]; ok {
				pods[i] = o
			}
		}
		s.lastGood[path] = pods
		cands = append(cands, pods...)
	}
	if readErr == nil {
		for path := range s.lastGood {
			if !present[path] {
				delete(s.lastGood, path) // file removed: its pods go away
			}
		}
	}
	for name := range s.skipped {
		if !seenNames[name] {
			delete(s.skipped, name)
		}
	}

	pods, dupErrs := s.resolveDuplicates(cands)
	errs = append(errs, dupErrs...)
	slices.SortFunc(pods, func(a, b *Pod) int { return strings.Compare(a.Key(), b.Key()) })
	slices.SortStableFunc(errs, func(a, b *FileError) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
	snap := Snapshot{Pods: pods, Errors: errs}

	changed := s.prev == nil || !sameSet(*s.prev, snap)
	s.logNew(snap)
	s.prev = &snap
	s.prevKeys = make(map[string]*Pod, len(pods))
	for _, p := range pods {
		s.prevKeys[p.Key()] = p
	}
	return snap, changed
}

// readFile reads and parses one manifest. gone reports a file removed
// between listing and reading, which counts as not present.
func (s *scanner) readFile(path string, info fs.FileInfo) (pods []*Pod, errs []*FileError, gone bool) {
	if info.Size() > MaxFileSize {
		return nil, []*FileError{{Path: path, Reason: fmt.Sprintf("file is larger than %d bytes (%d bytes)", MaxFileSize, info.Size())}}, false
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, true
	}
	if err != nil {
		return nil, []*FileError{{Path: path, Reason: "open: " + err.Error(), Err: err}}, false
	}
	defer f.Close()
	// Read one byte past the limit so a file that grew after stat is caught.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, []*FileError{{Path: path, Reason: "read: " + err.Error(), Err: err}}, false
	}
	pods, errs = parseFile(path, data, s.nodeName, s.now())
	if len(errs) > 0 {
		return nil, errs, false
	}
	return pods, nil, false
}

// resolveDuplicates keeps one pod per namespace/name: the one that was in
// the previous snapshot, else the one from the file that sorts first. Each
// loser gets a FileError naming both files.
func (s *scanner) resolveDuplicates(cands []*Pod) ([]*Pod, []*FileError) {
	byKey := map[string][]*Pod{}
	var keys []string
	for _, p := range cands {
		k := p.Key()
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	var (
		pods []*Pod
		errs []*FileError
	)
	for _, k := range keys {
		group := byKey[k]
		slices.SortStableFunc(group, func(a, b *Pod) int {
			return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Doc, b.Doc))
		})
		win := group[0]
		if prev := s.prevKeys[k]; prev != nil {
			for _, p := range group {
				if p.Path == prev.Path {
					win = p
					break
				}
			}
		}
		pods = append(pods, win)
		for _, p := range group {
			if p == win {
				continue
			}
			errs = append(errs, &FileError{
				Path: p.Path, Line: p.line, Field: "metadata.name", Err: ErrDuplicate,
				Reason: fmt.Sprintf("pod %s is also defined in %s, which is used; this one is ignored", k, win.Path),
			})
		}
	}
	return pods, errs
}

// withErr returns copies of the last good pods marked with err; the
// originals, already handed out, are not touched.
func withErr(good []*Pod, err error) []*Pod {
	out := make([]*Pod, 0, len(good))
	for _, p := range good {
		c := *p
		c.Err = err
		out = append(out, &c)
	}
	return out
}

// sameSet compares what a consumer acts on: the pods' UIDs and whether each
// is a kept last-good pod, and the errors.
func sameSet(a, b Snapshot) bool {
	if len(a.Pods) != len(b.Pods) || len(a.Errors) != len(b.Errors) {
		return false
	}
	for i := range a.Pods {
		if a.Pods[i].Hash != b.Pods[i].Hash || (a.Pods[i].Err == nil) != (b.Pods[i].Err == nil) {
			return false
		}
	}
	for i := range a.Errors {
		if a.Errors[i].Error() != b.Errors[i].Error() {
			return false
		}
	}
	return true
}

func (s *scanner) logSkip(name, reason string) {
	if s.skipped[name] == reason {
		return
	}
	s.skipped[name] = reason
	file := filepath.Join(s.dir, name)
	if strings.HasPrefix(reason, "not a manifest extension") || strings.HasPrefix(reason, "directory") {
		// Likely a user mistake rather than editor litter: say it louder.
		s.log.Info("skipping file in manifest directory", "file", file, "reason", reason)
		return
	}
	s.log.Debug("skipping file in manifest directory", "file", file, "reason", reason)
}

// logNew logs errors and warnings that the previous scan did not have, so a
// relist does not repeat them.
func (s *scanner) logNew(snap Snapshot) {
	errsNow := make(map[string]bool, len(snap.Errors))
	for _, e := range snap.Errors {
		msg := e.Error()
		errsNow[msg] = true
		if !s.loggedErrs[msg] {
			s.log.Warn("manifest error", "file", e.Path, "error", msg)
		}
	}
	s.loggedErrs = errsNow

	warnsNow := map[string]bool{}
	for _, p := range snap.Pods {
		if len(p.Warnings) == 0 {
			continue
		}
		warnsNow[p.Hash] = true
		if s.loggedWarns[p.Hash] {
			continue
		}
		for _, w := range p.Warnings {
			s.log.Warn("manifest warning", "file", p.Path, "pod", p.Key(), "warning", w)
		}
	}
	s.loggedWarns = warnsNow
}
