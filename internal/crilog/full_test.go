package crilog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// disk is a file system that can be full: while it is, a write stores half
// of its bytes and fails with ENOSPC, as a real one does when the write
// needs a block it cannot have, and so do status writes when statusFull.
type disk struct {
	mu         sync.Mutex
	full       bool
	statusFull bool
	opens      int
	writes     int // log writes tried while full
}

func (d *disk) setFull(full bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full = full
}

func (d *disk) counts() (opens, writes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.opens, d.writes
}

func (d *disk) open(path string) (logFile, error) {
	d.mu.Lock()
	d.opens++
	d.mu.Unlock()
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f.(*os.File), d: d}, nil
}

func (d *disk) putStatus(path string, b []byte) error {
	d.mu.Lock()
	full := d.statusFull
	d.mu.Unlock()
	if full {
		return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	return putStatusFile(path, b)
}

type diskFile struct {
	*os.File
	d *disk
}

func (f *diskFile) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	full := f.d.full
	if full {
		f.d.writes++
	}
	f.d.mu.Unlock()
	if !full {
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:len(p)/2])
	return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// clock is a settable clock, safe for the two copiers.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestWriter(t *testing.T, maxSize int64) (*Writer, *disk, *clock, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c", "0.log")
	d, c := &disk{}, newClock()
	w := newWriter(p, Policy{MaxSize: maxSize}, c.Now, d.open, d.putStatus)
	t.Cleanup(func() { w.Close() })
	return w, d, c, p
}

func contents(recs []Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Content))
	}
	return out
}

func gapLine(lines, bytes int64, since, last time.Time) string {
	return fmt.Sprintf("podvisor: log output dropped: %d bytes in %d lines from %s to %s (write: no space left on device)",
		bytes, lines, since.Format(time.RFC3339), last.Format(time.RFC3339))
}

// TestFullDisk: records the file cannot take are dropped and counted with
// one write tried per second, the torn piece of a short write is gone, the
// status file says so from the first drop, and when space returns the log
// goes on with a gap record.
func TestFullDisk(t *testing.T) {
	w, d, c, p := newTestWriter(t, 0)
	if got, err := ReadDrops(p); err != nil || got != (Drops{}) {
		t.Fatalf("status of a new log = %+v, %v; want zero", got, err)
	}
	if st, err := os.Stat(DropsPath(p)); err != nil || st.Size() != statusSize {
		t.Fatalf("status file not reserved at open: %v, %v", st, err)
	}
	if err := w.WriteRecord("stdout", false, []byte("before")); err != nil {
		t.Fatal(err)
	}

	d.setFull(true)
	since := c.Now()
	if err := w.WriteRecord("stdout", false, []byte("first drop")); !errors.Is(err, ErrDropped) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk = %v, want ErrDropped wrapping ENOSPC", err)
	}
	if got, _ := ReadDrops(p); got.Lines != 1 || got.Bytes != 10 || !got.Since.Equal(since) || got.Reason != "write: no space left on device" {
		t.Fatalf("status after the first drop = %+v", got)
	}
	// 10,000 records over 10 s: a write is tried about once a second,
	// not once a record.
	const n = 10000
	for i := range n {
		c.Advance(time.Millisecond)
		if err := w.WriteRecord("stderr", false, []byte(fmt.Sprintf("%05d", i))); !errors.Is(err, ErrDropped) {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	opens, writes := d.counts()
	if writes > 12 || opens > 12 {
		t.Errorf("%d writes and %d opens tried for %d records over 10s on a full disk, want about 10", writes, opens, n)
	}
	last := c.Now()

	d.setFull(false)
	c.Advance(time.Second)
	if err := w.WriteRecord("stdout", false, []byte("after")); err != nil {
		t.Fatalf("write after space returned: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"before", gapLine(n+1, 10+5*n, since, last), "after"}
	if got := contents(readRecords(t, p)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantDrops := Drops{Lines: n + 1, Bytes: 10 + 5*n, Since: since, Last: last, Reason: "write: no space left on device"}
	if got, err := ReadDrops(p); err != nil || !dropsEqual(got, wantDrops) {
		t.Errorf("status = %+v, %v; want %+v", got, err, wantDrops)
	}
}

func dropsEqual(a, b Drops) bool {
	return a.Lines == b.Lines && a.Bytes == b.Bytes && a.Since.Equal(b.Since) && a.Last.Equal(b.Last) && a.Reason == b.Reason
}

// TestCopyDrains: a process writing far more than a pipe holds to a log on
// a full disk finishes; Copy reads to EOF with one write tried while the
// clock stands still.
func TestCopyDrains(t *testing.T) {
	w, d, _, p := newTestWriter(t, 0)
	d.setFull(true)
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	const n = 100000 // 1 MB, sixteen times a pipe's buffer
	wrote := make(chan error, 1)
	go func() {
		_, err := wr.WriteString(strings.Repeat("123456789\n", n))
		wr.Close()
		wrote <- err
	}()
	copied := make(chan error, 1)
	go func() { copied <- w.Copy("stdout", r) }()
	for _, ch := range []chan error{wrote, copied} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("output to a log on a full disk blocked")
		}
	}
	if _, writes := d.counts(); writes != 1 {
		t.Errorf("%d writes tried with the clock standing still, want 1", writes)
	}
	w.Close()
	if got, _ := ReadDrops(p); got.Lines != n || got.Bytes != 9*n {
		t.Errorf("status = %+v, want %d lines and %d bytes", got, n, 9*n)
	}
}

// TestDropsOnRotationFailure: a rotation that fails drops records and the
// copier goes on; once it works the new file starts with the gap record.
func TestDropsOnRotationFailure(t *testing.T) {
	w, _, c, p := newTestWriter(t, 200)
	var mu sync.Mutex
	broken := true
	w.rot.rename = func(from, to string) error {
		mu.Lock()
		defer mu.Unlock()
		if broken {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
		}
		return os.Rename(from, to)
	}
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "line %02d\n", i)
	}
	if err := w.Copy("stdout", strings.NewReader(in.String())); err != nil {
		t.Fatal(err)
	}
	kept := len(readRecords(t, p))
	if kept == 0 || kept == 20 {
		t.Fatalf("%d of 20 records written before the rotation", kept)
	}
	if got, _ := ReadDrops(p); got.Lines == 0 || !strings.HasPrefix(got.Reason, "rename: ") {
		t.Fatalf("status = %+v, want drops by the rotation", got)
	}
	mu.Lock()
	broken = false
	mu.Unlock()
	c.Advance(time.Second)
	if err := w.WriteRecord("stdout", false, []byte("after")); err != nil {
		t.Fatal(err)
	}
	got := contents(readRecords(t, p))
	if len(got) != 2 || !strings.HasPrefix(got[0], fmt.Sprintf("podvisor: log output dropped: %d bytes in %d lines ", 7*(20-kept), 20-kept)) || got[1] != "after" {
		t.Errorf("log after the rotation = %q", got)
	}
	rotated, _ := Rotated(p)
	if len(rotated) != 1 {
		t.Fatalf("rotated = %q, want one", rotated)
	}
	if recs := readRecords(t, rotated[0]); len(recs) != kept {
		t.Errorf("rotated file has %d records, want %d", len(recs), kept)
	}
	w.Close()
	if got, _ := ReadDrops(p); got.Lines != int64(20-kept) || got.Bytes != int64(7*(20-kept)) {
		t.Errorf("status = %+v, want %d lines dropped by the rotation", got, 20-kept)
	}
}

// TestResumeReopens: a log deleted to free space is let go of; writing
// resumes in a new file at the path.
func TestResumeReopens(t *testing.T) {
	w, d, c, p := newTestWriter(t, 0)
	w.WriteRecord("stdout", false, []byte("old"))
	d.setFull(true)
	w.WriteRecord("stdout", false, []byte("dropped"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	d.setFull(false)
	c.Advance(time.Second)
	if err := w.WriteRecord("stdout", false, []byte("new")); err != nil {
		t.Fatal(err)
	}
	got := contents(readRecords(t, p))
	if len(got) != 2 || !strings.HasPrefix(got[0], "podvisor: log output dropped: 7 bytes in 1 lines ") || got[1] != "new" {
		t.Errorf("log = %q", got)
	}
}

// TestStatusRetried: a status file that cannot be written when a drop
// happens is written later, without another record.
func TestStatusRetried(t *testing.T) {
	w, d, _, p := newTestWriter(t, 0)
	d.mu.Lock()
	d.full, d.statusFull = true, true
	d.mu.Unlock()
	w.WriteRecord("stdout", false, []byte("x"))
	if got, _ := ReadDrops(p); got.Lines != 0 {
		t.Fatalf("status written on a full disk: %+v", got)
	}
	d.mu.Lock()
	d.statusFull = false
	d.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := ReadDrops(p)
		if err == nil && got.Lines == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status not retried: %+v, %v", got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.Close()
}

// TestOpenOnFullDisk: a driver whose file cannot be opened still drains,
// and writes once the file can be opened.
func TestOpenOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c", "0.log")
	fail := true
	open := func(path string) (logFile, error) {
		if fail {
			return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.ENOSPC}
		}
		return openAppend(path)
	}
	c := newClock()
	w := newWriter(p, Policy{}, c.Now, open, putStatusFile)
	defer w.Close()
	if err := w.Copy("stdout", strings.NewReader("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	fail = false
	c.Advance(time.Second)
	if err := w.WriteRecord("stdout", false, []byte("c")); err != nil {
		t.Fatal(err)
	}
	got := contents(readRecords(t, p))
	if len(got) != 2 || !strings.HasPrefix(got[0], "podvisor: log output dropped: 2 bytes in 2 lines ") || got[1] != "c" {
		t.Errorf("log = %q", got)
	}

	// A file that can be opened by the first record: nothing was
	// dropped, so there is no gap record.
	p = filepath.Join(dir, "c", "1.log")
	fail = true
	w = newWriter(p, Policy{}, c.Now, open, putStatusFile)
	defer w.Close()
	fail = false
	if err := w.WriteRecord("stdout", false, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if got := contents(readRecords(t, p)); len(got) != 1 || got[0] != "first" {
		t.Errorf("log = %q", got)
	}
}

func TestReadDrops(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "0.log")
	if d, err := ReadDrops(p); err != nil || d != (Drops{}) {
		t.Errorf("missing status = %+v, %v", d, err)
	}
	os.WriteFile(DropsPath(p), nil, 0o644)
	if d, err := ReadDrops(p); err != nil || d != (Drops{}) {
		t.Errorf("empty status = %+v, %v", d, err)
	}
	os.WriteFile(DropsPath(p), []byte("{"), 0o644)
	if _, err := ReadDrops(p); err == nil {
		t.Error("corrupt status read without error")
	}
	// The longest status fits its fixed size.
	want := Drops{Lines: 1<<63 - 1, Bytes: 1<<63 - 1, Since: time.Now(), Last: time.Now(), Reason: reason(errors.New(strings.Repeat("<é", 500)))}
	b := encodeDrops(want)
	if len(b) != statusSize {
		t.Fatalf("status is %d bytes, want %d", len(b), statusSize)
	}
	os.WriteFile(DropsPath(p), b, 0o644)
	got, err := ReadDrops(p)
	if err != nil || got.Reason == "" || !strings.HasPrefix(want.Reason, got.Reason) {
		t.Fatalf("round trip = %+v, %v; want the reason cut to fit", got, err)
	}
	got.Reason = want.Reason
	if !dropsEqual(got, want) {
		t.Errorf("round trip = %+v; want %+v", got, want)
	}
}

// A status file planted as a symlink or a FIFO is refused, not followed
// or waited on: podvisor polls these files for every container.
func TestReadDropsRefusesPlanted(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, encodeDrops(Drops{Lines: 7, Reason: "from the host"}), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(secret, DropsPath(link)); err != nil {
		t.Fatal(err)
	}
	if d, err := ReadDrops(link); err == nil {
		t.Errorf("a symlinked status was read: %+v", d)
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(DropsPath(fifo), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadDrops(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO status was read without error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadDrops blocked on a FIFO")
	}
}
