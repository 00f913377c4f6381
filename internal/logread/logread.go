package logread

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
)

// Line is one line of a container's output.
type Line struct {
	// Time is when its last record was written.
	Time time.Time
	// Stream is "stdout" or "stderr".
	Stream string
	// Content is the line without its newline.
	Content []byte
}

// Options selects lines, as the apiserver's PodLogOptions do.
type Options struct {
	// Since, when not zero, keeps the lines written at or after it.
	Since time.Time
	// Tail, when not negative, keeps the last Tail lines of the first
	// instance read.
	Tail int
}

// rotatedSuffix matches what follows "<n>.log." in a rotated file's name.
var rotatedSuffix = regexp.MustCompile(`^(1|[0-9]{8}-[0-9]{6}(\.gz)?)$`)

// Files returns the files of the instance whose live file is live, in the
// order they are read: rotated files in name order, then live itself
// (listed whether it exists or not).
func Files(live string) ([]string, error) {
	rotated, err := rotatedFiles(live)
	if err != nil {
		return nil, err
	}
	return append(rotated, live), nil
}

func rotatedFiles(live string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Dir(live))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list log files: %w", err)
	}
	prefix := filepath.Base(live) + "."
	var out []string
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), prefix); ok && rotatedSuffix.MatchString(rest) && e.Type().IsRegular() {
			out = append(out, filepath.Join(filepath.Dir(live), e.Name()))
		}
	}
	// "x.gz" sorts after "x", and stamps sort by time. While a rotated
	// file is compressed both are there: the plain one is read (or, if it
	// is gone by then, its .gz: see readWhole).
	slices.Sort(out)
	out = slices.CompactFunc(out, func(a, b string) bool { return rotatedKey(a) == rotatedKey(b) })
	return out, nil
}

// rotatedKey names a rotated file whether or not it is compressed yet.
func rotatedKey(path string) string { return strings.TrimSuffix(path, ".gz") }

// Read emits the lines of one instance's log, whose live file is live, as
// o selects them, and returns at its end. A missing live file is an empty
// log.
func Read(live string, o Options, emit func(Line) error) error {
	s := newSink(o, emit)
	files, err := Files(live)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := readWhole(f, s); err != nil {
			return err
		}
	}
	if err := s.endInstance(); err != nil {
		return err
	}
	return s.endTail()
}

// readWhole reads one file from start to end into s. A rotated file
// compressed (or removed) since it was listed is read as its .gz, or
// skipped.
func readWhole(path string, s *sink) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(path, ".gz") {
		path += ".gz"
		f, err = os.Open(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	lr := newLineReader(r)
	if err := lr.drain(s.record); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	// A compressed or rotated file is complete: a last line without its
	// newline is still a record.
	return lr.finish(s.record)
}

// lineReader reads newline-terminated CRI records from a reader that may
// grow (a live file): a line not yet ended is kept until it is.
type lineReader struct {
	br      *bufio.Reader
	pending []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// drain reads every complete line there is now and hands each parsed
// record to fn; it returns nil at the end of what is there.
func (lr *lineReader) drain(fn func(crilog.Record) error) error {
	for {
		b, err := lr.br.ReadSlice('\n')
		if len(b) > 0 {
			if b[len(b)-1] == '\n' {
				line := b[:len(b)-1]
				if len(lr.pending) > 0 {
					line = append(lr.pending, line...)
					lr.pending = lr.pending[:0]
				}
				if rec, perr := crilog.Parse(line); perr == nil {
					if err := fn(rec); err != nil {
						return err
					}
				}
			} else {
				lr.pending = append(lr.pending, b...)
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// finish hands a last line without its newline to fn.
func (lr *lineReader) finish(fn func(crilog.Record) error) error {
	if len(lr.pending) == 0 {
		return nil
	}
	line := lr.pending
	lr.pending = nil
	if rec, err := crilog.Parse(line); err == nil {
		return fn(rec)
	}
	return nil
}

// sink joins records into lines and applies Tail and Since.
type sink struct {
	since   time.Time
	tail    int // <0: not tailing (any more)
	ring    []Line
	partial map[string]*Line
	emit    func(Line) error
}

func newSink(o Options, emit func(Line) error) *sink {
	return &sink{since: o.Since, tail: o.Tail, partial: map[string]*Line{}, emit: emit}
}

func (s *sink) record(r crilog.Record) error {
	if p := s.partial[r.Stream]; p != nil {
		p.Content = append(p.Content, r.Content...)
		p.Time = r.Time
		if r.Partial {
			return nil
		}
		delete(s.partial, r.Stream)
		return s.line(*p)
	}
	l := Line{Time: r.Time, Stream: r.Stream, Content: r.Content}
	if r.Partial {
		s.partial[r.Stream] = &l
		return nil
	}
	return s.line(l)
}

func (s *sink) line(l Line) error {
	if s.tail >= 0 {
		if s.tail == 0 {
			return nil
		}
		if len(s.ring) == s.tail {
			copy(s.ring, s.ring[1:])
			s.ring = s.ring[:len(s.ring)-1]
		}
		s.ring = append(s.ring, l)
		return nil
	}
	if !s.since.IsZero() && l.Time.Before(s.since) {
		return nil
	}
	return s.emit(l)
}

// endInstance emits the partial lines the instance ended with, stdout's
// first.
func (s *sink) endInstance() error {
	for _, stream := range []string{"stdout", "stderr"} {
		if p := s.partial[stream]; p != nil {
			delete(s.partial, stream)
			if err := s.line(*p); err != nil {
				return err
			}
		}
	}
	return nil
}

// endTail emits the lines kept for Tail and stops tailing.
func (s *sink) endTail() error {
	if s.tail < 0 {
		return nil
	}
	ring := s.ring
	s.tail, s.ring = -1, nil
	for _, l := range ring {
		if err := s.line(l); err != nil {
			return err
		}
	}
	return nil
}

// Watch tells Follow about the log's future.
type Watch struct {
	// Poll is how often Follow looks for more at the end of the log;
	// 200ms when zero.
	Poll time.Duration
	// Next returns the live file of the instance after the one whose live
	// file is live, once it exists. Nil: NextInstance.
	Next func(live string) (string, bool)
	// Ended reports that the log whose instance has live file live will
	// not grow any more (the pod is gone, or the container ended for
	// good). Nil: never.
	Ended func(live string) bool
	// Idle, if not nil, is called when Follow has emitted all there is and
	// is about to wait (to flush output).
	Idle func() error
}

// NextInstance returns "<n+1>.log" beside live "<n>.log" when it exists.
func NextInstance(live string) (string, bool) {
	base := filepath.Base(live)
	var n int
	if _, err := fmt.Sscanf(base, "%d.log", &n); err != nil || fmt.Sprintf("%d.log", n) != base {
		return "", false
	}
	next := filepath.Join(filepath.Dir(live), fmt.Sprintf("%d.log", n+1))
	if _, err := os.Stat(next); err != nil {
		return "", false
	}
	return next, true
}

// Follow emits the lines of the instance whose live file is live, as o
// selects them, then follows it and the instances after it until w.Ended
// or ctx is done (then it returns ctx's error).
func Follow(ctx context.Context, live string, o Options, w Watch, emit func(Line) error) error {
	return follow(ctx, live, o, w, nil, emit)
}

// follow is Follow with a hook called, when not nil, before each look
// Follow takes at the files (a test stops it there to move them under it).
func follow(ctx context.Context, live string, o Options, w Watch, step func(string), emit func(Line) error) error {
	if w.Poll <= 0 {
		w.Poll = 200 * time.Millisecond
	}
	if w.Next == nil {
		w.Next = NextInstance
	}
	s := newSink(o, emit)
	f := &follower{ctx: ctx, w: w, s: s, hook: step}
	first := true
	for {
		next, err := f.instance(live, func() error {
			if first {
				first = false
				return s.endTail()
			}
			return nil
		})
		if err != nil || next == "" {
			return err
		}
		live = next
	}
}

type follower struct {
	ctx  context.Context
	w    Watch
	s    *sink
	hook func(string)
}

func (f *follower) step(name string) {
	if f.hook != nil {
		f.hook(name)
	}
}

// openLive is the live file being read.
type openLive struct {
	f  *os.File
	st os.FileInfo
	lr *lineReader
}

func (f *follower) open(path string) (*openLive, error) {
	f.step("open")
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("stat log: %w", err)
	}
	return &openLive{f: file, st: st, lr: newLineReader(file)}, nil
}

func (l *openLive) close() {
	if l != nil {
		l.f.Close()
	}
}

// instance follows one instance; it returns the next one's live file, or
// "" when the log ended. caughtUp runs each time the end is reached.
func (f *follower) instance(live string, caughtUp func() error) (string, error) {
	consumed := map[string]bool{}
	cur, rotated, err := f.openLatest(live)
	if err != nil {
		return "", err
	}
	defer func() { cur.close() }()
	// The rotated files older than the open live file come first; any
	// rotated after it was opened (the open file among them) are taken
	// up when the rotation is seen.
	for _, r := range rotated {
		f.step("read rotated")
		if err := readWhole(r, f.s); err != nil {
			return "", err
		}
		consumed[rotatedKey(r)] = true
	}
	for {
		if cur != nil {
			f.step("read")
			if err := cur.lr.drain(f.s.record); err != nil {
				return "", fmt.Errorf("read %s: %w", live, err)
			}
		}
		// Rotated away, or created at last?
		f.step("stat")
		st, err := os.Stat(live)
		moved := err == nil && (cur == nil || !os.SameFile(st, cur.st)) || errors.Is(err, fs.ErrNotExist) && cur != nil
		if moved {
			if cur != nil {
				// Finish the old file: what was written before the
				// writer moved on.
				if err := cur.lr.drain(f.s.record); err != nil {
					return "", fmt.Errorf("read %s: %w", live, err)
				}
				if err := cur.lr.finish(f.s.record); err != nil {
					return "", err
				}
			}
			next, rotated, err := f.openLatest(live)
			if err != nil {
				return "", err
			}
			err = f.takeRotated(rotated, cur, consumed)
			cur.close()
			cur = next
			if err != nil {
				cur.close()
				return "", err
			}
			continue
		}
		if err := caughtUp(); err != nil {
			return "", err
		}
		if next, ok := f.w.Next(live); ok {
			// The container has exited: its output is all there.
			if cur != nil {
				if err := cur.lr.drain(f.s.record); err != nil {
					return "", err
				}
				if err := cur.lr.finish(f.s.record); err != nil {
					return "", err
				}
			}
			return next, f.s.endInstance()
		}
		if f.w.Ended != nil && f.w.Ended(live) {
			if cur != nil {
				if err := cur.lr.drain(f.s.record); err != nil {
					return "", err
				}
			}
			return "", f.s.endInstance()
		}
		if f.w.Idle != nil {
			if err := f.w.Idle(); err != nil {
				return "", err
			}
		}
		t := time.NewTimer(f.w.Poll)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return "", f.ctx.Err()
		case <-t.C:
		}
	}
}

// openLatest opens the live file (nil if there is none) and lists the
// rotated files beside it, and the two agree: the list is taken after the
// open, and the live path is looked at again after the list, so that every
// file rotated before the open one is listed and none rotated after it is.
// Were the open file rotated before the list was taken, the files it was
// rotated with would be listed (and taken as read) while the file opened is
// the one after them; so when the live path has moved on by then, it is
// done again.
func (f *follower) openLatest(live string) (*openLive, []string, error) {
	for {
		cur, err := f.open(live)
		if err != nil {
			return nil, nil, err
		}
		f.step("list")
		rotated, err := rotatedFiles(live)
		if err != nil {
			cur.close()
			return nil, nil, err
		}
		// With no live file, anything listed is older than the next one.
		if cur == nil {
			return nil, rotated, nil
		}
		f.step("stat")
		if sameFile(live, cur.st) {
			return cur, rotated, nil
		}
		cur.close()
		if err := f.ctx.Err(); err != nil {
			return nil, nil, err
		}
	}
}

// takeRotated reads, in order, the rotated files listed and not read yet,
// except the one that was the open live file (read through cur).
func (f *follower) takeRotated(rotated []string, cur *openLive, consumed map[string]bool) error {
	var fresh []string
	for _, r := range rotated {
		if !consumed[rotatedKey(r)] && !slices.Contains(fresh, rotatedKey(r)) {
			fresh = append(fresh, rotatedKey(r))
		}
	}
	ours := -1
	if cur != nil {
		for i, r := range fresh {
			f.step("identify")
			if sameFile(r, cur.st) {
				ours = i
				break
			}
		}
		if ours < 0 && len(fresh) > 0 {
			// Compressed already (a new inode): the oldest new one.
			ours = 0
		}
	}
	for i, r := range fresh {
		consumed[r] = true
		if i == ours {
			continue
		}
		f.step("read rotated")
		if err := readWhole(r, f.s); err != nil {
			return err
		}
	}
	return nil
}

func sameFile(path string, st os.FileInfo) bool {
	fi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, st)
}
