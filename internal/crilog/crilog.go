package crilog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MaxLine is the longest piece written as one record; longer lines are split
// into partial records, as containerd's CRI plugin does.
const MaxLine = 16 * 1024

// DefaultMaxSize is the default cap of one log file before it rotates.
const DefaultMaxSize = 10 * 1024 * 1024

// ErrDropped is wrapped by the error of a record the Writer dropped
// because its file could not take it.
var ErrDropped = errors.New("log record dropped")

// retryInterval is how long a Writer whose file failed drops records
// before it tries the file again.
const retryInterval = time.Second

// logFile is what a Writer needs of its open file; tests put a full disk
// behind it.
type logFile interface {
	io.Writer
	Stat() (fs.FileInfo, error)
	Truncate(size int64) error
	Close() error
}

// openAppend opens the log file for appending. O_NOFOLLOW: a symlink
// planted at the log path (by whoever can write the log directory) is not
// followed, so a root-owned file elsewhere is never appended to or
// truncated at rotation; the open fails (ELOOP) and the records are
// dropped and counted instead.
func openAppend(path string) (logFile, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o640)
}

// Writer appends CRI records to a file, rotating it to "<path>.<stamp>"
// when it would grow past MaxSize and keeping at most MaxFiles files of it,
// all but the two most recent gzip-compressed (see Rotated). A record the
// file cannot take is dropped and counted, and the file is tried again on a
// later record (see the package contract). Safe for concurrent use by the
// stdout and stderr copiers.
//
// States, all under mu:
//
//	writing ── write, rotation or open fails ──▶ failing (retryAt = now+1s)
//	   ▲                                            │ records before retryAt:
//	   │                                            │ counted, dropped, no I/O
//	   └── reopen and gap record written ◀──────────┘ first record after retryAt
type Writer struct {
	Path     string
	MaxSize  int64
	MaxFiles int
	Now      func() time.Time

	// openFile and putStatus are the file system; tests replace them.
	openFile  func(path string) (logFile, error)
	putStatus func(path string, b []byte) error
	rot       *rotator

	mu   sync.Mutex
	f    logFile // nil after a failed open or rotation
	size int64
	buf  []byte
	torn bool // a short write could not be truncated away

	failing bool
	failErr error // ErrDropped wrapping the cause
	retryAt time.Time
	gap     Drops // dropped since the last record written
	total   Drops // what the status file says
	dirty   bool  // total is newer than the status file
	flushAt *time.Timer
	closed  bool
}

// Open opens (appending to) the log file at path, and creates or takes up
// its status file (DropsPath). A file that cannot be opened is no error:
// the Writer starts out dropping records and tries the file again, as
// after a failed write, so a driver started on a full disk still drains.
func Open(path string, maxSize int64) *Writer {
	return OpenPolicy(path, Policy{MaxSize: maxSize})
}

// OpenPolicy is Open with the rotation policy p.
func OpenPolicy(path string, p Policy) *Writer {
	return newWriter(path, p, time.Now, openAppend, putStatusFile)
}

func newWriter(path string, p Policy, now func() time.Time, openFile func(string) (logFile, error), putStatus func(string, []byte) error) *Writer {
	p = p.withDefaults()
	w := &Writer{Path: path, MaxSize: p.MaxSize, MaxFiles: p.MaxFiles, Now: now, openFile: openFile, putStatus: putStatus}
	w.rot = newRotator(path, p.MaxFiles)
	defer w.rot.start()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.open(); err != nil {
		t := w.Now()
		w.fail(t, err)
		w.retryAt = t // the first record tries again
	}
	// Counts carry on from an earlier writer of the same file (a corrupt
	// status starts again from zero). Writing the status now reserves its
	// space for when the disk is full.
	w.total, _ = ReadDrops(path)
	w.dirty = true
	w.flushStatus()
	return w
}

func (w *Writer) open() error {
	if err := os.MkdirAll(filepath.Dir(w.Path), 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	f, err := w.openFile(w.Path)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	w.f, w.size = f, st.Size()
	return nil
}

// WriteRecord writes one record; content must not contain a newline. It
// never waits for a failing file: it drops the record, counts it and
// returns an error wrapping ErrDropped.
func (w *Writer) WriteRecord(stream string, partial bool, content []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return os.ErrClosed
	}
	now := w.Now()
	if w.failing {
		if now.Before(w.retryAt) {
			w.drop(now, len(content))
			return w.failErr
		}
		if err := w.resume(now); err != nil {
			w.fail(now, err)
			w.drop(now, len(content))
			return w.failErr
		}
	}
	if err := w.writeLine(w.format(now, stream, partial, content)); err != nil {
		w.fail(now, err)
		w.drop(now, len(content))
		return w.failErr
	}
	return nil
}

// format renders a record into w.buf.
func (w *Writer) format(now time.Time, stream string, partial bool, content []byte) []byte {
	tag := byte('F')
	if partial {
		tag = 'P'
	}
	b := w.buf[:0]
	b = now.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ' ', tag, ' ')
	b = append(b, content...)
	b = append(b, '\n')
	w.buf = b
	return b
}

// resume reopens the file by path (a log deleted to free space is let go
// of, one truncated is seen at its new size) and writes the gap record.
func (w *Writer) resume(now time.Time) error {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if w.gap.Lines == 0 {
		// Failed to open, nothing dropped yet: no gap to tell.
		if w.f == nil {
			if err := w.open(); err != nil {
				return err
			}
		}
	} else {
		gap := fmt.Sprintf("podvisor: log output dropped: %d bytes in %d lines from %s to %s (%s)",
			w.gap.Bytes, w.gap.Lines, w.gap.Since.UTC().Format(time.RFC3339), w.gap.Last.UTC().Format(time.RFC3339), w.gap.Reason)
		if err := w.writeLine(w.format(now, "stderr", false, []byte(gap))); err != nil {
			return err
		}
	}
	w.failing, w.failErr, w.gap = false, nil, Drops{}
	w.flushStatus()
	// Space is back: a compression that failed for want of it can go on.
	w.rot.wake()
	return nil
}

// writeLine appends one formatted line, opening or rotating the file first
// when needed.
func (w *Writer) writeLine(line []byte) error {
	if w.f == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	if w.size > 0 && w.size+int64(len(line)) > w.MaxSize {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	if w.torn {
		// End the torn piece, so it spoils one line, not this one too.
		line = append([]byte{'\n'}, line...)
	}
	n, err := w.f.Write(line)
	if err != nil {
		w.unwrite(n)
		return fmt.Errorf("write log file: %w", err)
	}
	w.size += int64(n)
	w.torn = false
	return nil
}

// unwrite takes a short write of n bytes off the end of the file. The size
// is taken from the file, not w.size, because someone may have truncated
// it to free space.
func (w *Writer) unwrite(n int) {
	if n <= 0 {
		return
	}
	st, err := w.f.Stat()
	if err == nil && st.Size() >= int64(n) {
		if err = w.f.Truncate(st.Size() - int64(n)); err == nil {
			w.size = st.Size() - int64(n)
			return
		}
	}
	w.size += int64(n)
	w.torn = true
}

func (w *Writer) rotate() error {
	if err := w.rot.rotate(w.Now()); err != nil {
		return err
	}
	w.f.Close()
	w.f, w.torn = nil, false
	return w.open()
}

// fail enters (or stays in) the failing state after err.
func (w *Writer) fail(now time.Time, err error) {
	w.failing = true
	w.retryAt = now.Add(retryInterval)
	w.failErr = fmt.Errorf("%w: %w", ErrDropped, err)
	w.gap.Reason = reason(err)
}

// drop counts a dropped record of n content bytes. The first drop of a gap
// is reported at once; later ones at most once per retryInterval.
func (w *Writer) drop(now time.Time, n int) {
	first := w.gap.Lines == 0
	if first {
		w.total.Gaps++
	}
	for _, d := range []*Drops{&w.gap, &w.total} {
		if d.Since.IsZero() {
			d.Since = now
		}
		d.Lines++
		d.Bytes += int64(n)
		d.Last = now
		d.Reason = w.gap.Reason
	}
	w.dirty = true
	if first {
		w.flushStatus()
	} else {
		w.scheduleFlush()
	}
}

// flushStatus writes the status file if it is behind; a failure is retried
// by the timer.
func (w *Writer) flushStatus() {
	if !w.dirty {
		return
	}
	if err := w.putStatus(DropsPath(w.Path), encodeDrops(w.total)); err != nil {
		w.scheduleFlush()
		return
	}
	w.dirty = false
}

func (w *Writer) scheduleFlush() {
	if w.flushAt != nil || w.closed {
		return
	}
	w.flushAt = time.AfterFunc(retryInterval, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.flushAt = nil
		if !w.closed {
			w.flushStatus()
		}
	})
}

// Close writes the gap record of output dropped at the end, if the file
// takes it now, brings the status file up to date and closes the file. It
// waits for the compression of rotated files under way or wanted.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return os.ErrClosed
	}
	defer w.rot.stop()
	if w.failing {
		w.resume(w.Now())
	}
	w.flushStatus()
	w.closed = true
	if w.flushAt != nil {
		w.flushAt.Stop()
		w.flushAt = nil
	}
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

// Copy reads r line by line until EOF and writes each line as records of
// stream ("stdout" or "stderr"). Records the file cannot take are dropped
// (WriteRecord): Copy returns only when reading ends or fails, so whatever
// writes to r never blocks on the log.
func (w *Writer) Copy(stream string, r io.Reader) error {
	br := bufio.NewReaderSize(r, MaxLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			w.WriteRecord(stream, false, line[:len(line)-1])
		case errors.Is(err, bufio.ErrBufferFull):
			w.WriteRecord(stream, true, line)
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				// Output ended without a newline: the piece is the last of
				// its line, so it is written as full, as CRI does.
				w.WriteRecord(stream, false, line)
			}
			return nil
		default:
			return err
		}
	}
}

// Record is one parsed log record.
type Record struct {
	Time    time.Time
	Stream  string
	Partial bool
	Content []byte
}

// Parse parses one CRI log line (without its newline).
func Parse(line []byte) (Record, error) {
	var r Record
	s := string(line)
	ts, rest, ok := strings.Cut(s, " ")
	if !ok {
		return r, fmt.Errorf("crilog: no timestamp in %q", s)
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return r, fmt.Errorf("crilog: bad timestamp: %w", err)
	}
	stream, rest, ok := strings.Cut(rest, " ")
	if !ok || (stream != "stdout" && stream != "stderr") {
		return r, fmt.Errorf("crilog: bad stream in %q", s)
	}
	tag, content, ok := strings.Cut(rest, " ")
	if !ok && tag != "F" && tag != "P" {
		return r, fmt.Errorf("crilog: bad tag in %q", s)
	}
	r.Time, r.Stream, r.Partial, r.Content = t, stream, tag == "P", []byte(content)
	return r, nil
}
