package crilog

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StampLayout is the time layout of a rotated log's suffix, kubelet's
// ("<log>.20060102-150405"), always in UTC so that names sort in the order
// they were made whatever the box's time zone does.
const StampLayout = "20060102-150405"

// DefaultMaxFiles is the default number of files a container instance's log
// may take, the live one included, as kubelet's containerLogMaxFiles.
const DefaultMaxFiles = 5

// MinMaxFiles is the least MaxFiles there can be: the live file and the
// most recent rotated one (kubelet rejects fewer).
const MinMaxFiles = 2

const (
	gzSuffix  = ".gz"
	tmpSuffix = ".tmp"
)

// Policy is how a log rotates.
type Policy struct {
	// MaxSize is the size a log file may reach before it rotates;
	// zero or less is DefaultMaxSize.
	MaxSize int64
	// MaxFiles is how many files the log may take, the live one
	// included; zero is DefaultMaxFiles, less than MinMaxFiles is
	// MinMaxFiles.
	MaxFiles int
}

func (p Policy) withDefaults() Policy {
	if p.MaxSize <= 0 {
		p.MaxSize = DefaultMaxSize
	}
	switch {
	case p.MaxFiles == 0:
		p.MaxFiles = DefaultMaxFiles
	case p.MaxFiles < MinMaxFiles:
		p.MaxFiles = MinMaxFiles
	}
	return p
}

// rotatedFile is one rotation of a log: "<log>.<stamp>", or
// "<log>.<stamp>.gz" once compressed.
type rotatedFile struct {
	stamp string
	plain bool // "<log>.<stamp>" exists
	gz    bool // "<log>.<stamp>.gz" exists
	tmp   bool // "<log>.<stamp>.tmp" exists: a compression under way or left behind
}

// listRotated reads the rotations of the log at path, oldest first. Other
// files beside it (its status file, other logs, a legacy "<log>.1") are
// not rotations.
func listRotated(path string) ([]rotatedFile, error) {
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	prefix := filepath.Base(path) + "."
	byStamp := map[string]*rotatedFile{}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || len(rest) < len(StampLayout) || !isStamp(rest[:len(StampLayout)]) {
			continue
		}
		stamp, suffix := rest[:len(StampLayout)], rest[len(StampLayout):]
		if suffix != "" && suffix != gzSuffix && suffix != tmpSuffix {
			continue
		}
		r := byStamp[stamp]
		if r == nil {
			r = &rotatedFile{stamp: stamp}
			byStamp[stamp] = r
		}
		switch suffix {
		case "":
			r.plain = true
		case gzSuffix:
			r.gz = true
		case tmpSuffix:
			r.tmp = true
		}
	}
	out := make([]rotatedFile, 0, len(byStamp))
	for _, r := range byStamp {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].stamp < out[j].stamp })
	return out, nil
}

// isStamp reports whether s is a time in StampLayout.
func isStamp(s string) bool {
	_, err := time.Parse(StampLayout, s)
	return err == nil
}

// Rotated lists the rotated files of the log at path, oldest first, each
// "<path>.<stamp>.gz" (gzip) or, the most recent one and any not yet
// compressed, "<path>.<stamp>" (plain CRI). path itself, the live file, is
// not listed. Temporary files of a compression under way are not listed;
// a rotation being compressed is listed by its plain name until its .gz is
// complete.
func Rotated(path string) ([]string, error) {
	rs, err := listRotated(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list rotated logs: %w", err)
	}
	var out []string
	for _, r := range rs {
		switch {
		case r.gz:
			out = append(out, path+"."+r.stamp+gzSuffix)
		case r.plain:
			out = append(out, path+"."+r.stamp)
		}
	}
	return out, nil
}

// RemoveAll removes the log at path with everything of it: its rotations,
// compressed or not, temporary files, a legacy "<path>.1" and its status
// file.
func RemoveAll(path string) error {
	var errs []error
	for _, p := range []string{path, path + ".1", DropsPath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	rs, err := listRotated(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, r := range rs {
		errs = append(errs, r.remove(path, true))
	}
	return errors.Join(errs...)
}

// remove removes the rotation's files, and its temporary file if tmp.
func (r rotatedFile) remove(path string, tmp bool) error {
	base := path + "." + r.stamp
	var errs []error
	for _, s := range []string{"", gzSuffix, tmpSuffix} {
		if s == tmpSuffix && !tmp {
			continue
		}
		if err := os.Remove(base + s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rotator owns a log's rotated files. The Writer calls rotate on its write
// path, which only renames and removes; a goroutine of its own compresses,
// so a container's output never waits for gzip.
//
// mu is held for each change of the file set (a rename, a removal, taking
// a finished .gz in) and never during compression, so rotate waits at most
// for a few system calls.
type rotator struct {
	path     string
	maxFiles int

	// tmpWriter wraps a temporary file's writes; tests put a full disk
	// behind it.
	tmpWriter func(*os.File) io.Writer
	rename    func(from, to string) error

	mu   sync.Mutex
	last time.Time // the latest stamp made, so that each is new

	kick    chan struct{} // buffer 1: a pass is wanted
	quit    chan struct{}
	done    chan struct{}
	errMu   sync.Mutex
	lastErr error // the latest failed compression, for tests
}

func newRotator(path string, maxFiles int) *rotator {
	return &rotator{
		path: path, maxFiles: maxFiles,
		tmpWriter: func(f *os.File) io.Writer { return f },
		rename:    os.Rename,
		kick:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
	}
}

// start runs the compressor, with a first pass that takes up what an
// earlier writer of the log left: temporary files of a driver killed while
// compressing (of any log in the directory), rotations not yet compressed.
func (r *rotator) start() {
	r.mu.Lock()
	if rs, err := listRotated(r.path); err == nil && len(rs) > 0 {
		r.last, _ = time.Parse(StampLayout, rs[len(rs)-1].stamp)
	}
	r.mu.Unlock()
	removeStaleTmp(filepath.Dir(r.path))
	r.wake()
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.kick:
				r.pass()
			case <-r.quit:
				// Finish what was asked for: at most maxFiles-2
				// files of at most MaxSize each.
				select {
				case <-r.kick:
					r.pass()
				default:
				}
				return
			}
		}
	}()
}

// stop stops the compressor once the pass under way or wanted is done.
func (r *rotator) stop() {
	close(r.quit)
	<-r.done
}

func (r *rotator) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// rotate renames the live file to a new rotation and removes the oldest
// rotations beyond maxFiles-1; the caller opens a new live file.
func (r *rotator) rotate(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := now.UTC().Truncate(time.Second)
	if !t.After(r.last) {
		// Two rotations in one second: the later takes the next second,
		// so names stay unique and in order.
		t = r.last.Add(time.Second)
	}
	name := r.path + "." + t.Format(StampLayout)
	for exists(name) || exists(name+gzSuffix) {
		t = t.Add(time.Second)
		name = r.path + "." + t.Format(StampLayout)
	}
	if err := r.rename(r.path, name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Someone removed the live file: nothing to rotate.
			return nil
		}
		return fmt.Errorf("rotate log file: %w", err)
	}
	r.last = t
	r.removeExcess()
	r.wake()
	return nil
}

// removeExcess removes the oldest rotations so that at most maxFiles-1
// remain beside the live file; mu is held. A compression of a removed
// rotation sees it gone and throws its output away.
func (r *rotator) removeExcess() error {
	rs, err := listRotated(r.path)
	if err != nil {
		return err
	}
	rs = withFiles(rs)
	var errs []error
	for i := 0; i < len(rs)-(r.maxFiles-1); i++ {
		errs = append(errs, rs[i].remove(r.path, false))
	}
	return errors.Join(errs...)
}

// withFiles drops the rotations that have no file to read (a lone
// temporary file).
func withFiles(rs []rotatedFile) []rotatedFile {
	out := rs[:0:0]
	for _, x := range rs {
		if x.plain || x.gz {
			out = append(out, x)
		}
	}
	return out
}

// pass compresses every rotation but the most recent, as kubelet does (the
// most recent may still be read by a shipper that has not finished it),
// after removing what a rotation or compression left behind.
func (r *rotator) pass() {
	r.mu.Lock()
	rs, err := listRotated(r.path)
	if err != nil {
		r.mu.Unlock()
		return
	}
	rs = withFiles(rs)
	var todo []string
	for i, x := range rs {
		base := r.path + "." + x.stamp
		if x.plain && x.gz {
			// Compressed by a driver that died before it removed
			// the plain copy.
			os.Remove(base)
			continue
		}
		if x.plain && i < len(rs)-1 {
			todo = append(todo, base)
		}
	}
	r.removeExcess()
	r.mu.Unlock()
	// The compressor's own temporary files exist only while it runs, so
	// any here are of a driver that died.
	removeStaleTmp(filepath.Dir(r.path))
	for _, base := range todo {
		err := r.compress(base)
		r.errMu.Lock()
		r.lastErr = err
		r.errMu.Unlock()
	}
}

// compress gzips the rotation at base to base.gz through base.tmp, which
// it holds a lock on while it exists (removeStaleTmp leaves it alone), and
// removes base. On any failure (ENOSPC) it removes base.tmp and keeps
// base: the next pass tries again.
func (r *rotator) compress(base string) (err error) {
	src, err := os.OpenFile(base, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed as excess
		}
		return fmt.Errorf("compress log: %w", err)
	}
	defer src.Close()
	tmp := base + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
		f.Close() // also lets go of the lock
	}()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("compress log: lock %s: %w", tmp, err)
	}
	zw := gzip.NewWriter(r.tmpWriter(f))
	if _, err := io.Copy(zw, src); err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !exists(base) {
		// Removed as excess while we compressed it.
		return os.Remove(tmp)
	}
	if err := os.Rename(tmp, base+gzSuffix); err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	os.Remove(base)
	return nil
}

// removeStaleTmp removes the temporary files in dir that no compressor
// holds: those of a driver that died while compressing.
func removeStaleTmp(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), tmpSuffix) || !strings.Contains(e.Name(), ".log.") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(p)
		}
		f.Close()
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
