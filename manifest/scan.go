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
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
)

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

// scanMode says what a scan may read.
type scanMode int

const (
	// scanEvents follows events: it reads files announced complete
	// (close-write, moved-to, a link created, a ..data swap).
	scanEvents scanMode = iota
	// scanRelist also picks up files that changed or appeared without an
	// announcing event, once their identity has been seen unchanged at two
	// relists in a row.
	scanRelist
)

// fileSig identifies a file's content without reading it.
type fileSig struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// fileEvent is what an inotify event says about one directory entry.
type fileEvent int

const (
	evCreate fileEvent = iota // IN_CREATE
	evModify                  // IN_MODIFY
	evClosed                  // IN_CLOSE_WRITE or IN_MOVED_TO: the content is complete
	evRemove                  // IN_DELETE or IN_MOVED_FROM
	evAttrib                  // IN_ATTRIB
)

// fileState is everything the scanner knows about one manifest path.
type fileState struct {
	// From events; reset by an overflow or a new directory.
	modified bool     // written since the last close: being written
	created  bool     // created as a new regular file, not closed since
	needRead bool     // new complete content was announced
	attrib   bool     // metadata changed (touch, chmod, chown)
	pending  *fileSig // identity seen at a relist with no announcing event

	// From reading.
	read  bool             // read since it appeared (or since podvisor started)
	sig   fileSig          // identity of the content last read
	lkg   map[int]*docGood // last good content per document index
	pods  []*Pod           // effective: valid documents and kept last-good ones
	objs  []*object        // likewise
	errs  []*FileError     // of the last read
	warns []*FileError     // of the last read
	ioErr *FileError       // this scan could not stat or read the file
}

// docGood is the last valid content of one document.
type docGood struct {
	pods []*Pod
	objs []*object
}

// entry is one directory entry that may be a manifest.
type entry struct {
	name, path string
	link       bool // a symlink (followed)
}

// scanner reads the directory and builds snapshots; it remembers the last
// good content of every file, what events said about each file, and what it
// has logged. It is owned by one goroutine.
type scanner struct {
	dir        string
	files      []string // explicit files instead of dir (Validate)
	nodeName   string
	log        *slog.Logger
	now        func() time.Time
	opts       ParseOptions
	trustedUID int
	statePath  string // "" when nothing is persisted

	state      map[string]*fileState // path -> state
	winners    map[string]string     // "Pod ns/name", "ConfigMap ns/name" -> path
	fullRead   bool                  // next scan reads every file not being written
	dotChanged bool                  // a dot-entry changed: re-read symlinked files

	prev       *Snapshot // last built snapshot, nil before the first scan
	prevObjSig string    // objects of prev, for change detection
	lastState  []byte    // state file content last written or read

	skipped     map[string]string // entry name -> reason already logged
	loggedErrs  map[string]bool   // FileError texts logged and still present
	loggedWarns map[string]bool   // warning texts logged and still present
	loggedState string            // last state file error logged
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
		state:       map[string]*fileState{},
		winners:     map[string]string{},
		fullRead:    true,
		skipped:     map[string]string{},
		loggedErrs:  map[string]bool{},
		loggedWarns: map[string]bool{},
	}
}

// fileEvent records an event on the directory entry name and reports
// whether a rescan is due.
func (s *scanner) fileEvent(name string, ev fileEvent) bool {
	if strings.HasPrefix(name, ".") {
		// Never a manifest, but an atomic writer swaps symlink targets
		// through dot-entries (Kubernetes' ..data): the symlinked manifests
		// may have new content.
		if ev == evModify {
			return false
		}
		s.dotChanged = true
		return true
	}
	if skipReason(name) != "" {
		return ev != evModify && ev != evAttrib // rescan only to log it once
	}
	path := filepath.Join(s.dir, name)
	st := s.state[path]
	if st == nil {
		if ev == evRemove {
			return true
		}
		st = &fileState{}
		s.state[path] = st
	}
	switch ev {
	case evCreate:
		st.needRead, st.created, st.modified, st.pending = false, false, false, nil
		fi, err := os.Lstat(path)
		switch {
		case err != nil:
			// Gone already; the scan finds out.
		case fi.Mode()&fs.ModeSymlink != 0:
			st.needRead = true // a symlink is complete when it is created
		case fi.Mode().IsRegular():
			if _, nlink, ok := ownerOf(fi); ok && nlink > 1 {
				st.needRead = true // a hard link to a finished file
			} else {
				st.created = true // open(O_CREAT): the writer has not finished
			}
		}
		return true
	case evModify:
		st.modified = true
		return false // nothing can be read until the writer closes it
	case evClosed:
		st.modified, st.created, st.needRead, st.pending = false, false, true, nil
		return true
	case evRemove:
		st.modified, st.created, st.needRead, st.pending = false, false, false, nil
		return true
	case evAttrib:
		st.attrib = true
		return true // permissions may have changed
	}
	return false
}

// resetEvents forgets what events said: after an inotify overflow, or when
// the directory was replaced, events may be missing, so the next scan reads
// every file that is not being written (as at start).
func (s *scanner) resetEvents() {
	for _, st := range s.state {
		st.modified, st.created, st.needRead, st.attrib, st.pending = false, false, false, false, nil
	}
	s.fullRead = true
}

// list returns the entries of the directory (or the explicit files).
func (s *scanner) list() ([]entry, error) {
	if s.files != nil {
		var out []entry
		for _, p := range s.files {
			fi, err := os.Lstat(p)
			link := err == nil && fi.Mode()&fs.ModeSymlink != 0
			out = append(out, entry{name: filepath.Base(p), path: p, link: link})
		}
		return out, nil
	}
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(des))
	for _, d := range des {
		out = append(out, entry{name: d.Name(), path: filepath.Join(s.dir, d.Name()), link: d.Type()&fs.ModeSymlink != 0})
	}
	return out, nil
}

// scan reads what needs reading and returns the full desired set, and
// whether it differs from the previous scan's (always true for the first).
func (s *scanner) scan(mode scanMode) (Snapshot, bool) {
	entries, listErr := s.list()
	var dirErr *FileError
	switch {
	case errors.Is(listErr, fs.ErrNotExist):
		// Not created yet, or removed: no pods. The Source watches the parent.
		entries = nil
	case listErr != nil:
		// An unreadable directory is not a removed one: keep every last good
		// pod running, marked with the error.
		dirErr = &FileError{Path: s.dir, Reason: "read directory: " + listErr.Error(), Err: listErr}
	}

	var manifests []entry
	if dirErr == nil {
		present := map[string]bool{}
		seenNames := map[string]bool{}
		for _, e := range entries {
			seenNames[e.name] = true
			if s.visit(e, mode) {
				present[e.path] = true
				manifests = append(manifests, e)
			}
		}
		for path := range s.state {
			if !present[path] {
				delete(s.state, path) // removed, renamed away, or no longer a manifest
			}
		}
		for name := range s.skipped {
			if !seenNames[name] {
				delete(s.skipped, name)
			}
		}
		s.fullRead, s.dotChanged = false, false
	}

	snap := s.build(dirErr, manifests)
	objSig := objectsSig(snap)
	changed := s.prev == nil || !sameSet(*s.prev, snap) || objSig != s.prevObjSig
	s.logNew(snap)
	s.prev, s.prevObjSig = &snap, objSig
	s.persist()
	return snap, changed
}

// visit decides whether to read one directory entry, reads it, and reports
// whether it is a manifest that is present.
func (s *scanner) visit(e entry, mode scanMode) bool {
	if reason := skipReason(e.name); reason != "" {
		s.logSkip(e, reason)
		return false
	}
	info, err := os.Stat(e.path) // follows symlinks
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if e.link {
			s.logSkip(e, "dangling symlink")
		}
		return false
	case err != nil:
		st := s.stateOf(e.path)
		st.ioErr = &FileError{Path: e.path, Reason: "stat: " + err.Error(), Err: err}
		return true
	case info.IsDir():
		s.logSkip(e, "directory (subdirectories are not read)")
		return false
	case !info.Mode().IsRegular():
		s.logSkip(e, "not a regular file")
		return false
	}
	delete(s.skipped, e.name)

	st := s.stateOf(e.path)
	st.ioErr = nil
	sig := sigOf(info)
	read := false
	switch {
	case st.modified:
		// Being written: keep the previous state until the writer closes it.
	case st.needRead, e.link && s.dotChanged, s.fullRead:
		read = true
	case st.created, !st.read:
		// Appeared with no sign that its writer is done (a hard link whose
		// other name went away, or a missed event): read it once it has
		// been seen unchanged at two relists.
		read = mode == scanRelist && st.stable(sig)
	case sig == st.sig:
		// Unchanged since it was read.
	case st.attrib:
		st.sig = sig // touch, chmod: the content did not change
	default:
		// Changed with no event saying the writer is done: a symlink target
		// outside the directory edited in place, or a lost event.
		read = mode == scanRelist && st.stable(sig)
	}
	st.attrib = false
	if !read {
		return true
	}
	res, rsig, ioErr, gone := s.readFile(e.path)
	switch {
	case gone:
		return false
	case ioErr != nil:
		st.ioErr = ioErr // needRead stays set: try again at the next scan
		return true
	}
	s.apply(e.path, st, res)
	st.read, st.sig, st.needRead, st.created, st.pending = true, rsig, false, false, nil
	return true
}

func (s *scanner) stateOf(path string) *fileState {
	st := s.state[path]
	if st == nil {
		st = &fileState{}
		s.state[path] = st
	}
	return st
}

// stable records sig and reports whether the previous relist saw the same.
func (st *fileState) stable(sig fileSig) bool {
	if st.pending != nil && *st.pending == sig {
		return true
	}
	st.pending = &sig
	return false
}

// readFile reads and parses one manifest. gone reports a file removed
// between listing and reading, which counts as not present.
func (s *scanner) readFile(path string) (res fileResult, sig fileSig, ioErr *FileError, gone bool) {
	// O_NONBLOCK: a FIFO swapped in after the stat must not hang the scan.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return res, sig, nil, true
	}
	if err != nil {
		return res, sig, &FileError{Path: path, Reason: "open: " + err.Error(), Err: err}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return res, sig, &FileError{Path: path, Reason: "stat: " + err.Error(), Err: err}, false
	}
	if !fi.Mode().IsRegular() {
		return res, sig, nil, true
	}
	sig = sigOf(fi)
	if fi.Size() > MaxFileSize {
		res.errs = []*FileError{{Path: path, Reason: fmt.Sprintf("file is larger than %d bytes (%d bytes)", MaxFileSize, fi.Size())}}
		return res, sig, nil, false
	}
	// Read one byte past the limit so a file that grew after stat is caught.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return res, sig, &FileError{Path: path, Reason: "read: " + err.Error(), Err: err}, false
	}
	return parseDocs(path, data, s.nodeName, s.now(), s.opts), sig, nil, false
}

// apply makes a new parse of a file take effect, document by document: a
// valid document replaces that index's last good content, an invalid one
// keeps it (its pods marked with the document's first error). An error of
// the whole file (too large, empty) keeps every document's last good content.
func (s *scanner) apply(path string, st *fileState, res fileResult) {
	st.errs, st.warns = nil, nil
	st.errs = append(st.errs, res.errs...)
	for _, d := range res.docs {
		st.errs = append(st.errs, d.errs...)
		st.warns = append(st.warns, d.warns...)
	}
	if len(res.errs) > 0 {
		st.pods, st.objs = keepAll(st.lkg, res.errs[0])
		return
	}

	// Keep the pod objects of unchanged documents, so consumers see the same
	// *Pod (and config.seen) until the content really changes.
	oldPods := map[string]*Pod{}
	oldObjs := map[string]*object{}
	for _, g := range st.lkg {
		for _, p := range g.pods {
			oldPods[p.Hash] = p
		}
		for _, o := range g.objs {
			oldObjs[o.hash] = o
		}
	}
	lkg := map[int]*docGood{}
	var (
		pods  []*Pod
		objs  []*object
		taken = map[string]bool{}
	)
	for _, d := range res.docs {
		if len(d.errs) > 0 {
			continue
		}
		g := &docGood{}
		for _, p := range d.pods {
			if o, ok := oldPods[p.Hash]; ok && o.Doc == p.Doc {
				p = o
			}
			g.pods = append(g.pods, p)
			taken["Pod "+p.Key()] = true
		}
		for _, o := range d.objs {
			if old, ok := oldObjs[o.hash]; ok && old.doc == o.doc {
				o = old
			}
			g.objs = append(g.objs, o)
			taken[o.id()] = true
		}
		lkg[d.index] = g
		pods = append(pods, g.pods...)
		objs = append(objs, g.objs...)
	}
	for _, d := range res.docs {
		g := st.lkg[d.index]
		if len(d.errs) == 0 || g == nil {
			continue
		}
		lkg[d.index] = g
		// A valid document naming the same pod (documents moved around)
		// takes precedence over a kept one.
		for _, p := range withErr(g.pods, d.errs[0]) {
			if !taken["Pod "+p.Key()] {
				pods = append(pods, p)
			}
		}
		for _, o := range g.objs {
			if !taken[o.id()] {
				objs = append(objs, o)
			}
		}
	}
	st.lkg, st.pods, st.objs = lkg, pods, objs
}

// keepAll returns every last good pod marked with err, and the objects.
func keepAll(lkg map[int]*docGood, err error) ([]*Pod, []*object) {
	var (
		pods []*Pod
		objs []*object
	)
	for _, i := range slices.Sorted(maps.Keys(lkg)) {
		pods = append(pods, withErr(lkg[i].pods, err)...)
		objs = append(objs, lkg[i].objs...)
	}
	return pods, objs
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

// candidate is a pod or object competing for its namespace/name.
type candidate struct {
	id   string // "Pod ns/name" or "ConfigMap ns/name"
	path string
	doc  int
	line int
	pod  *Pod
	obj  *object
}

// build assembles the snapshot from the file states: duplicates resolved,
// references checked, permissions checked.
func (s *scanner) build(dirErr *FileError, manifests []entry) Snapshot {
	var (
		cands []candidate
		errs  []*FileError
		warns []*FileError
	)
	if dirErr != nil {
		errs = append(errs, dirErr)
	}
	for _, path := range slices.Sorted(maps.Keys(s.state)) {
		st := s.state[path]
		pods, objs := st.pods, st.objs
		switch {
		case dirErr != nil:
			pods, objs = keepAll(st.lkg, dirErr)
		case st.ioErr != nil:
			pods, objs = keepAll(st.lkg, st.ioErr)
			errs = append(errs, st.ioErr)
		default:
			errs = append(errs, st.errs...)
			warns = append(warns, st.warns...)
		}
		for _, p := range pods {
			cands = append(cands, candidate{id: "Pod " + p.Key(), path: p.Path, doc: p.Doc, line: p.line, pod: p})
		}
		for _, o := range objs {
			cands = append(cands, candidate{id: o.id(), path: o.path, doc: o.doc, line: o.line, obj: o})
		}
	}

	winners, dupErrs := s.resolve(cands)
	errs = append(errs, dupErrs...)
	snap := Snapshot{}
	have := map[string]bool{}
	for _, c := range winners {
		have[c.id] = true
	}
	for _, c := range winners {
		switch {
		case c.obj != nil && c.obj.cm != nil:
			if snap.ConfigMaps == nil {
				snap.ConfigMaps = map[string]*v1.ConfigMap{}
			}
			snap.ConfigMaps[c.obj.key] = c.obj.cm
		case c.obj != nil:
			if snap.Secrets == nil {
				snap.Secrets = map[string]*v1.Secret{}
			}
			snap.Secrets[c.obj.key] = c.obj.secret
		default:
			if missing := missingReferences(c.pod, func(id string) bool { return have[id] }); len(missing) > 0 {
				errs = append(errs, missing...)
				continue
			}
			snap.Pods = append(snap.Pods, c.pod)
		}
	}
	warns = append(warns, s.permissions(manifests)...)

	slices.SortFunc(snap.Pods, func(a, b *Pod) int { return strings.Compare(a.Key(), b.Key()) })
	sortErrors(errs)
	sortErrors(warns)
	snap.Errors, snap.Warnings = errs, warns
	return snap
}

func sortErrors(errs []*FileError) {
	slices.SortStableFunc(errs, func(a, b *FileError) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
}

// resolve keeps one candidate per kind and namespace/name: the one that
// was used before (in the previous snapshot, or recorded in the state file
// at start), else the one from the file that sorts first. Each loser gets an
// error naming both files. The winners are recorded for the next scan.
func (s *scanner) resolve(cands []candidate) ([]candidate, []*FileError) {
	byID := map[string][]candidate{}
	var ids []string
	for _, c := range cands {
		if _, ok := byID[c.id]; !ok {
			ids = append(ids, c.id)
		}
		byID[c.id] = append(byID[c.id], c)
	}
	var (
		out     []candidate
		errs    []*FileError
		winners = make(map[string]string, len(ids))
	)
	for _, id := range ids {
		group := byID[id]
		slices.SortStableFunc(group, func(a, b candidate) int {
			return cmp.Or(strings.Compare(a.path, b.path), cmp.Compare(a.doc, b.doc))
		})
		win := group[0]
		if prev, ok := s.winners[id]; ok {
			for _, c := range group {
				if c.path == prev {
					win = c
					break
				}
			}
		}
		out = append(out, win)
		winners[id] = win.path
		kind, key, _ := strings.Cut(id, " ")
		if kind == "Pod" {
			kind = "pod"
		}
		for _, c := range group {
			if c.path == win.path && c.doc == win.doc {
				continue
			}
			errs = append(errs, &FileError{
				Path: c.path, Line: c.line, Field: "metadata.name", Err: ErrDuplicate,
				Reason: fmt.Sprintf("%s %s is also defined in %s, which is used; this one is ignored", kind, key, win.path),
			})
		}
	}
	s.winners = winners
	return out, errs
}

// sameSet compares what a consumer acts on: the pods' UIDs and whether each
// is a kept last-good pod, the errors and the warnings.
func sameSet(a, b Snapshot) bool {
	if len(a.Pods) != len(b.Pods) || len(a.Errors) != len(b.Errors) || len(a.Warnings) != len(b.Warnings) {
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
	for i := range a.Warnings {
		if a.Warnings[i].Error() != b.Warnings[i].Error() {
			return false
		}
	}
	return true
}

// objectsSig is a digest of the ConfigMaps and Secrets of a snapshot, to
// tell a change; unchanged objects keep their pointers.
func objectsSig(snap Snapshot) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(snap.ConfigMaps)) {
		fmt.Fprintf(&b, "cm %s %p\n", k, snap.ConfigMaps[k])
	}
	for _, k := range slices.Sorted(maps.Keys(snap.Secrets)) {
		fmt.Fprintf(&b, "secret %s %p\n", k, snap.Secrets[k])
	}
	return b.String()
}

func (s *scanner) logSkip(e entry, reason string) {
	if s.skipped[e.name] == reason {
		return
	}
	s.skipped[e.name] = reason
	if strings.HasPrefix(reason, "not a manifest extension") || strings.HasPrefix(reason, "directory") {
		// Likely a user mistake rather than editor litter: say it louder.
		s.log.Info("skipping file in manifest directory", "file", e.path, "reason", reason)
		return
	}
	s.log.Debug("skipping file in manifest directory", "file", e.path, "reason", reason)
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
	logWarn := func(key string, args ...any) {
		warnsNow[key] = true
		if !s.loggedWarns[key] {
			s.log.Warn("manifest warning", args...)
		}
	}
	for _, p := range snap.Pods {
		for _, w := range p.Warnings {
			logWarn(p.Hash+" "+w, "file", p.Path, "pod", p.Key(), "warning", w)
		}
	}
	for _, w := range snap.Warnings {
		logWarn(w.Error(), "file", w.Path, "warning", w.Error())
	}
	s.loggedWarns = warnsNow
}
