// Package crilog writes and reads container logs in the CRI log format that
// kubelet and kubectl use: one line per record,
//
//	<RFC3339Nano timestamp> <stdout|stderr> <P|F> <content>
//
// where P marks a partial line (the writer split a long line) and F the
// full or final piece. podvisor runs the writer as containerd's "binary"
// log driver (`podvisor log-driver`), a process the shim starts per task, so
// container output keeps flowing to its file while podvisor itself is
// stopped or being upgraded.
package crilog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxLine is the longest piece written as one record; longer lines are split
// into partial records, as containerd's CRI plugin does.
const MaxLine = 16 * 1024

// DefaultMaxSize is the default cap of one log file before it rotates.
const DefaultMaxSize = 10 * 1024 * 1024

// Writer appends CRI records to a file, rotating it to "<path>.1" when it
// would grow past MaxSize, so a container's logs never take more than about
// twice MaxSize. Safe for concurrent use by the stdout and stderr copiers.
type Writer struct {
	Path    string
	MaxSize int64
	Now     func() time.Time

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (appending to) the log file at path.
func Open(path string, maxSize int64) (*Writer, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	w := &Writer{Path: path, MaxSize: maxSize, Now: time.Now}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	if err := os.MkdirAll(filepath.Dir(w.Path), 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(w.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
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

// WriteRecord writes one record; content must not contain a newline.
func (w *Writer) WriteRecord(stream string, partial bool, content []byte) error {
	tag := "F"
	if partial {
		tag = "P"
	}
	var b strings.Builder
	b.Grow(len(content) + 48)
	b.WriteString(w.Now().UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(content)
	b.WriteByte('\n')
	line := b.String()

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.size > 0 && w.size+int64(len(line)) > w.MaxSize {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	n, err := io.WriteString(w.f, line)
	w.size += int64(n)
	return err
}

func (w *Writer) rotate() error {
	w.f.Close()
	if err := os.Rename(w.Path, w.Path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotate log file: %w", err)
	}
	return w.open()
}

// Close closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// Copy reads r line by line until EOF and writes each line as records of
// stream ("stdout" or "stderr").
func (w *Writer) Copy(stream string, r io.Reader) error {
	br := bufio.NewReaderSize(r, MaxLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			if werr := w.WriteRecord(stream, false, line[:len(line)-1]); werr != nil {
				return werr
			}
		case errors.Is(err, bufio.ErrBufferFull):
			if werr := w.WriteRecord(stream, true, line); werr != nil {
				return werr
			}
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				// Output ended without a newline: the piece is the last of
				// its line, so it is written as full, as CRI does.
				return w.WriteRecord(stream, false, line)
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

// DriverArg encodes a log path and size cap into the single argument
// containerd passes to a binary log driver. containerd turns each query
// parameter of the log URI into two arguments in map order, so everything
// the driver needs travels in one value.
func DriverArg(path string, maxSize int64) string {
	return strconv.FormatInt(maxSize, 10) + ":" + path
}

// ParseDriverArg is the inverse of DriverArg.
func ParseDriverArg(arg string) (path string, maxSize int64, err error) {
	n, p, ok := strings.Cut(arg, ":")
	if !ok || !filepath.IsAbs(p) {
		return "", 0, fmt.Errorf("log driver: bad argument %q", arg)
	}
	maxSize, err = strconv.ParseInt(n, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("log driver: bad size in %q: %w", arg, err)
	}
	return p, maxSize, nil
}

// RunDriver is the body of `podvisor log-driver ARG`, started by a
// containerd shim with the task's stdout on fd 3, stderr on fd 4 and a
// readiness pipe on fd 5. It returns when both streams reach EOF.
func RunDriver(arg string) error {
	path, maxSize, err := ParseDriverArg(arg)
	if err != nil {
		return err
	}
	stdout := os.NewFile(3, "stdout")
	stderr := os.NewFile(4, "stderr")
	// Closing the readiness pipe lets the shim go on creating the task.
	// It is done first: the output pipes buffer whatever the container
	// writes until the file is open, and the shim must not wait for our
	// file system (nor hang if opening the file fails).
	if ready := os.NewFile(5, "ready"); ready != nil {
		ready.Close()
	}
	w, err := Open(path, maxSize)
	if err != nil {
		return err
	}
	defer w.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []struct {
		name string
		f    *os.File
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if s.f == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Copy(s.name, s.f)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
