package manifest

import (
	"errors"
	"fmt"
	"github.com/podvisor/podvisor/internal/trust"
	"github.com/podvisor/podvisor/manifest/podfile"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

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

// fileState is everything the scanner knows about one manifest path.
type fileState struct {
	// From events; reset by an overflow or a new directory.
	modified bool     // written since the last close: being written
	created  bool     // created as a new regular file, not closed since
	needRead bool     // new complete content was announced
	attrib   bool     // metadata changed (touch, chmod, chown)
	pending  *fileSig // identity seen at a relist with no announcing event

	// From reading.
	read bool              // read since it appeared (or since podvisor started)
	sig  fileSig           // identity of the content last read
	lkg  map[int]*docGood  // last good content per document index
	pods []*Pod            // effective: valid documents and kept last-good ones
	objs []*podfile.Object // likewise
	// objErrs maps the Hash of each kept last good object (its document
	// is invalid now) to that document's first error.
	objErrs map[string]error
	errs    []*FileError // of the last read
	warns   []*FileError // of the last read
	ioErr   *FileError   // this scan could not stat or read the file
	// insecure is why the file is not used (ErrInsecure): someone other
	// than root could change it; it is not read while it is set.
	insecure *FileError
	// secret: the content last read holds a kind: Secret document
	// (valid or not); perm is the file's mode at the last scan.
	secret bool
	perm   fs.FileMode
}

// entry is one directory entry that may be a manifest.
type entry struct {
	name, path string
	link       bool // a symlink (followed)
	dir        bool // a directory (not through a symlink)
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
	secrets    secretStore

	state      map[string]*fileState // path -> state
	winners    map[string]string     // "Pod ns/name", "ConfigMap ns/name" -> path
	fullRead   bool                  // next scan reads every file not being written
	dotChanged bool                  // a dot-entry changed: re-read symlinked files

	prev       *Snapshot // last built snapshot, nil before the first scan
	prevObjSig string    // objects of prev, for change detection
	lastState  []byte    // state file content last written or read

	skipped     map[string]string // entry name -> reason already logged
	loggedErrs  map[string]bool   // FileError texts logged and still present
	errFiles    map[string]bool   // paths with errors in the last snapshot
	loggedWarns map[string]bool   // warning texts logged and still present
	loggedState string            // last state file error logged

	parsed int // bytes of manifests parsed by this scan

	dirInsecure bool // the last scan refused the directory as insecure
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
		out = append(out, entry{name: d.Name(), path: filepath.Join(s.dir, d.Name()), link: d.Type()&fs.ModeSymlink != 0, dir: d.IsDir()})
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
	case s.files == nil && !s.opts.AllowInsecure:
		// A directory others could write is not used: its pods keep
		// their last good versions, and no new file is read, until it
		// is fixed; then every file is read again.
		if probs := s.dirProblems(); len(probs) > 0 {
			dirErr = insecureError(s.dir, probs)
			s.dirInsecure = true
		} else if s.dirInsecure {
			s.dirInsecure, s.fullRead = false, true
		}
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
	if s.parsed >= largeParse {
		returnMemory() // the previous content of the files read is garbage now too
	}
	s.parsed = 0
	return snap, changed
}

// visit decides whether to read one directory entry, reads it, and reports
// whether it is a manifest that is present.
func (s *scanner) visit(e entry, mode scanMode) bool {
	if reason := skipReason(e.name); reason != "" {
		if e.dir && strings.HasPrefix(reason, "not a manifest extension") {
			reason = dirReason // what it is, not what its name lacks
		}
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
		s.logSkip(e, dirReason)
		return false
	case !info.Mode().IsRegular():
		s.logSkip(e, specialReason(info.Mode(), e.link))
		return false
	}
	delete(s.skipped, e.name)

	st := s.stateOf(e.path)
	st.ioErr, st.perm = nil, info.Mode().Perm()
	if !s.opts.AllowInsecure {
		// A file others could change is not read: what it holds now is
		// not a pod, and its last good version (read while it was
		// secure) keeps running. Once fixed, it is read again.
		if probs := s.fileProblems(e); len(probs) > 0 {
			st.insecure = insecureError(e.path, probs)
			return true
		}
		if st.insecure != nil {
			st.insecure, st.needRead = nil, true
		}
	}
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
	case len(res.untrusted) > 0:
		// Changed between the checks by path and the open: not used,
		// as above.
		st.insecure = insecureError(e.path, res.untrusted)
		return true
	}
	if res.foreign {
		s.logSkip(e, foreignReason)
	}
	s.apply(e.path, st, res)
	if res.scanned { // else what it holds is not known: what was is
		st.secret = res.secret
	}
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

// fileResult is one read file: parsed, or a JSON file that is no
// Kubernetes object (foreignJSON), which has no documents and no errors.
type fileResult struct {
	podfile.Result
	foreign bool
	// untrusted is why the opened file may not be used (see open): it
	// was not read.
	untrusted []string
	scanned   bool // the content was read (not too large)
	secret    bool // a document is (or may be, when it does not parse) a Secret
}

// readFile reads and parses one manifest. gone reports a file removed
// between listing and reading, which counts as not present.
func (s *scanner) readFile(path string) (res fileResult, sig fileSig, ioErr *FileError, gone bool) {
	f, untrusted, err := s.open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return res, sig, nil, true
	}
	if err != nil {
		return res, sig, &FileError{Path: path, Reason: "open: " + err.Error(), Err: err}, false
	}
	defer f.Close()
	if len(untrusted) > 0 {
		res.untrusted = untrusted
		return res, sig, nil, false
	}
	fi, err := f.Stat()
	if err != nil {
		return res, sig, &FileError{Path: path, Reason: "stat: " + err.Error(), Err: err}, false
	}
	if !fi.Mode().IsRegular() {
		return res, sig, nil, true
	}
	sig = sigOf(fi)
	if fi.Size() > MaxFileSize {
		res.Errors = []*FileError{{Path: path, Reason: fmt.Sprintf("file is larger than %d bytes (%d bytes)", MaxFileSize, fi.Size())}}
		return res, sig, nil, false
	}
	data, err := readAll(f, fi.Size())
	if err != nil {
		return res, sig, &FileError{Path: path, Reason: "read: " + err.Error(), Err: err}, false
	}
	s.parsed += len(data)
	if s.files == nil && foreignJSON(path, data) {
		return fileResult{foreign: true, scanned: true}, sig, nil, false
	}
	return fileResult{Result: podfile.ParseDocuments(path, data, s.nodeName, s.now(), s.opts), scanned: true, secret: podfile.MayHoldSecret(data)}, sig, nil, false
}

// open opens a manifest for reading. Unless insecure manifests are
// allowed, it is opened as trust.Open opens it: walked from / by
// descriptor, every directory and symlink on the way and the file itself
// checked on the descriptors read from, so a file or link swapped after
// the checks by path is caught here; untrusted lists what is wrong. With
// O_NONBLOCK a FIFO swapped in after the stat does not hang the scan.
func (s *scanner) open(path string) (f *os.File, untrusted []string, err error) {
	if s.opts.AllowInsecure {
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		return f, nil, err
	}
	f, problems, err := trust.Open(path, s.trustedUID)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range problems {
		untrusted = append(untrusted, p.String())
	}
	return f, untrusted, nil
}

// readAll reads a file of the given size (at stat time) into one buffer of
// that size, and up to one byte past MaxFileSize if it grew since, so that
// parseDocs catches a file that grew too large.
func readAll(f io.Reader, size int64) ([]byte, error) {
	data := make([]byte, size+1)
	n, err := io.ReadFull(f, data)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return data[:n], nil
	case err != nil:
		return nil, err
	}
	rest, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1-int64(n)))
	return append(data, rest...), err
}
