package logread

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
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

// rotated lists the names of the rotated files of the live file name in
// d, in the order they are read. Anything named as one is listed, whatever
// its type: opening it refuses what is not a regular file.
func (d *containerDir) rotated(name string) ([]string, error) {
	entries, err := d.names()
	if err != nil {
		return nil, err
	}
	prefix := name + "."
	var out []string
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e, prefix); ok && rotatedSuffix.MatchString(rest) {
			out = append(out, e)
		}
	}
	// "x.gz" sorts after "x", and stamps sort by time. While a rotated
	// file is compressed both are there: the plain one is read (or, if it
	// is gone by then, its .gz: see readRotated).
	slices.Sort(out)
	out = slices.CompactFunc(out, func(a, b string) bool { return rotatedKey(a) == rotatedKey(b) })
	return out, nil
}

// rotatedKey names a rotated file whether or not it is compressed yet.
func rotatedKey(name string) string { return strings.TrimSuffix(name, ".gz") }

// Read emits the lines of one instance's log, whose live file is live, as
// o selects them, and returns at its end. A missing live file is an empty
// log.
func Read(live string, o Options, emit func(Line) error) error {
	s := newSink(o, emit)
	root, err := openRoot(live)
	if err != nil {
		return err
	}
	defer closeRoot(root)
	d, err := openContainerDir(root, live)
	if err != nil {
		return err
	}
	if d != nil {
		defer d.close()
		name := filepath.Base(live)
		rotated, err := d.rotated(name)
		if err != nil {
			return err
		}
		for _, r := range rotated {
			if err := readRotated(d, r, s); err != nil {
				return err
			}
		}
		f, err := d.open(name)
		if err != nil {
			return err
		}
		if f != nil {
			err = readWhole(f, s)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	if err := s.endInstance(); err != nil {
		return err
	}
	return s.endTail()
}

// readRotated reads the rotated file name of d from start to end into s.
// One compressed since it was listed is read as its .gz; one removed
// before it could be read leaves a line that says so.
func readRotated(d *containerDir, name string, s *sink) error {
	f, err := d.open(name)
	if err == nil && f == nil && !strings.HasSuffix(name, ".gz") {
		name += ".gz"
		f, err = d.open(name)
	}
	if err != nil {
		return err
	}
	if f == nil {
		return s.note(fmt.Sprintf("podvisor: log output missing: rotated log file %s was removed before it was read", rotatedKey(name)))
	}
	defer f.Close()
	return readWhole(f, s)
}

// readWhole reads the open file f from start to end into s, gunzipping a
// .gz.
func readWhole(f *os.File, s *sink) error {
	var r io.Reader = f
	if strings.HasSuffix(f.Name(), ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Name(), err)
		}
		defer zr.Close()
		r = zr
	}
	lr := newLineReader(r)
	if err := lr.drain(s.record); err != nil {
		return fmt.Errorf("read %s: %w", f.Name(), err)
	}
	// A compressed or rotated file is complete: a last line without its
	// newline is still a record.
	return lr.finish(s.record)
}

// maxRecord bounds a record's line: the writer's longest (crilog.MaxLine
// of content) with room for its header. A longer line is no record of the
// writer's (a file planted in the log directory, or a torn write), and is
// skipped rather than held in memory whole.
const maxRecord = crilog.MaxLine + 1024

// lineReader reads newline-terminated CRI records from a reader that may
// grow (a live file): a line not yet ended is kept until it is.
type lineReader struct {
	br       *bufio.Reader
	pending  []byte
	skipping bool // the line under way is longer than maxRecord
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
			switch {
			case b[len(b)-1] != '\n':
				if !lr.skipping && len(lr.pending)+len(b) > maxRecord {
					lr.skipping, lr.pending = true, lr.pending[:0]
				}
				if !lr.skipping {
					lr.pending = append(lr.pending, b...)
				}
			case lr.skipping:
				lr.skipping = false
			default:
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
	last    time.Time // of the latest record
}

func newSink(o Options, emit func(Line) error) *sink {
	return &sink{since: o.Since, tail: o.Tail, partial: map[string]*Line{}, emit: emit}
}

func (s *sink) record(r crilog.Record) error {
	s.last = r.Time
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

// note emits a line of podvisor's own on stderr, stamped with the time of
// the latest record (lines stay in time order), or now before any.
func (s *sink) note(content string) error {
	t := s.last
	if t.IsZero() {
		t = time.Now()
	}
	return s.line(Line{Time: t, Stream: "stderr", Content: []byte(content)})
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
