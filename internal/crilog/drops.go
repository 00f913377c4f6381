package crilog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// Drops counts the output a log driver dropped because the log file could
// not take it.
type Drops struct {
	// Lines is the number of records dropped (a long line split into
	// partial records counts once per record).
	Lines int64 `json:"lines"`
	// Bytes is the content of those records, line ends not counted.
	Bytes int64 `json:"bytes"`
	// Since is the time of the first drop, Last of the latest.
	Since time.Time `json:"since,omitzero"`
	Last  time.Time `json:"last,omitzero"`
	// Reason is the latest failure, e.g. "write: no space left on device".
	Reason string `json:"reason,omitempty"`
	// Gaps counts the episodes of drops: each begins with the first
	// record dropped after one was written (or at open) and ends when
	// writing resumes. Zero with Lines set is a status written by a
	// driver from before Gaps.
	Gaps int64 `json:"gaps,omitempty"`
}

// statusSize is the fixed size of a status file: it is rewritten in place,
// within blocks it already has, so that it can be updated on a full disk.
const statusSize = 512

// maxReason bounds Reason so that a status always fits in statusSize.
const maxReason = 200

// DropsPath is the status file of the log at logPath.
func DropsPath(logPath string) string { return logPath + ".dropped" }

// ReadDrops reads the status file of the log at logPath. A missing or
// empty file (a driver that never dropped anything, or could not yet write
// it) is no drops and no error.
func ReadDrops(logPath string) (Drops, error) {
	path := DropsPath(logPath)
	// The driver rewrites the file in place, so a read can overlap a
	// write; two equal reads in a row are not torn.
	var prev []byte
	for range 3 {
		b, err := readStatus(path)
		if errors.Is(err, fs.ErrNotExist) {
			return Drops{}, nil
		}
		if err != nil {
			return Drops{}, fmt.Errorf("read log drops: %w", err)
		}
		if prev != nil && bytes.Equal(b, prev) {
			break
		}
		prev = b
	}
	b := bytes.TrimSpace(prev)
	if len(b) == 0 {
		return Drops{}, nil
	}
	var d Drops
	if err := json.Unmarshal(b, &d); err != nil {
		return Drops{}, fmt.Errorf("read log drops %s: %w", path, err)
	}
	return d, nil
}

// readStatus reads a status file as the driver writes it: a regular file,
// never through a symlink (one planted at the path would make podvisor
// read a file elsewhere) and without blocking (a FIFO planted there would
// hold the reader forever), at most twice statusSize.
func readStatus(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink, not followed", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	b := make([]byte, 2*statusSize)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// encodeDrops renders d as a status file: JSON padded with spaces to
// statusSize, ending in a newline.
func encodeDrops(d Drops) []byte {
	b, _ := json.Marshal(d)
	for len(b) >= statusSize && d.Reason != "" {
		// Escapes can make a short reason long in JSON.
		d.Reason = cut(d.Reason, len(d.Reason)/2)
		b, _ = json.Marshal(d)
	}
	out := bytes.Repeat([]byte{' '}, statusSize)
	copy(out, b)
	out[statusSize-1] = '\n'
	return out
}

// putStatusFile overwrites the status file in place; b is always
// statusSize bytes, so after the first write it needs no new space.
func putStatusFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// reason is the short cause of a write error: the failed operation and
// its errno ("write: no space left on device") without the log's path, or
// else the error, cut to maxReason bytes.
func reason(err error) string {
	var (
		pe *fs.PathError
		le *os.LinkError
		s  = err.Error()
	)
	switch {
	case errors.As(err, &pe):
		s = pe.Op + ": " + pe.Err.Error()
	case errors.As(err, &le):
		s = le.Op + ": " + le.Err.Error()
	}
	return cut(s, maxReason)
}

// cut shortens s to at most n bytes of valid UTF-8.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
