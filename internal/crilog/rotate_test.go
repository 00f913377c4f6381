package crilog

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readAny reads the records of a plain or gzip log file.
func readAny(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = zr
	}
	var out []Record
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rec, err := Parse(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// names lists the files of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// writeNumbered writes records "<from>".."<from+n-1>" of 5 content bytes
// (a 36-byte line), advancing the clock by step each.
func writeNumbered(t *testing.T, w *Writer, c *clock, from, n int, step time.Duration) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := w.WriteRecord("stdout", false, []byte(fmt.Sprintf("%05d", i))); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		c.Advance(step)
	}
}

// checkSuffix checks that the rotated files and the live one hold, in
// order, the last records written of 0..n-1, all of them from some point.
func checkSuffix(t *testing.T, p string, n int) (first int) {
	t.Helper()
	rotated, err := Rotated(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range append(rotated, p) {
		got = append(got, contents(readAny(t, f))...)
	}
	if len(got) == 0 {
		t.Fatal("no records kept")
	}
	fmt.Sscanf(got[0], "%d", &first)
	for i, s := range got {
		if want := fmt.Sprintf("%05d", first+i); s != want {
			t.Fatalf("record %d of the kept logs = %q, want %q (kept %q)", i, s, want, got)
		}
	}
	if last := first + len(got) - 1; last != n-1 {
		t.Fatalf("kept records %d..%d, want the last to be %d", first, last, n-1)
	}
	return first
}

// TestRotateSizeAndCount: a log rotates when it would pass MaxSize, to
// kubelet's "<log>.<YYYYMMDD-HHMMSS>", keeps MaxFiles files with all but
// the most recent rotation gzipped, and loses only its oldest records.
func TestRotateSizeAndCount(t *testing.T) {
	const maxSize = 200
	for _, maxFiles := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(maxFiles), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c", "0.log")
			c := newClock()
			w := newWriter(p, Policy{MaxSize: maxSize, MaxFiles: maxFiles}, c.Now, openAppend, putStatusFile)
			const n = 60
			writeNumbered(t, w, c, 0, n, 3*time.Second)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rotated, err := Rotated(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(rotated) != maxFiles-1 {
				t.Fatalf("rotated = %q, want %d of them (files in dir: %q)", rotated, maxFiles-1, names(t, filepath.Dir(p)))
			}
			for i, f := range rotated {
				stamp := strings.TrimSuffix(strings.TrimPrefix(f, p+"."), ".gz")
				if _, err := time.Parse(StampLayout, stamp); err != nil {
					t.Errorf("rotated file %s: stamp %q: %v", f, stamp, err)
				}
				if gz := strings.HasSuffix(f, ".gz"); gz != (i < len(rotated)-1) {
					t.Errorf("rotated file %s: compressed %v, want all but the most recent compressed", f, gz)
				}
				if st, err := os.Stat(f); err == nil && !strings.HasSuffix(f, ".gz") && st.Size() > maxSize {
					t.Errorf("%s is %d bytes, cap is %d", f, st.Size(), maxSize)
				}
			}
			// Only the live file, the rotations and the status file.
			if got := names(t, filepath.Dir(p)); len(got) != maxFiles+1 {
				t.Errorf("files = %q, want %d logs and the status file", got, maxFiles)
			}
			// Lines are 36 bytes: 5 to a file.
			if kept := n - checkSuffix(t, p, n); kept <= 5*(maxFiles-1) || kept > 5*maxFiles {
				t.Errorf("kept %d records, want what %d files of 5 hold", kept, maxFiles)
			}
		})
	}
}

// TestRotateSameSecond: rotations within one second still get names of
// their own, in order.
func TestRotateSameSecond(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	c := newClock()
	w := newWriter(p, Policy{MaxSize: 100, MaxFiles: 10}, c.Now, openAppend, putStatusFile)
	writeNumbered(t, w, c, 0, 20, 0) // 2 records a file: 9 rotations
	w.Close()
	rotated, _ := Rotated(p)
	if len(rotated) != 9 {
		t.Fatalf("rotated = %q, want 9", rotated)
	}
	for i, f := range rotated {
		want := p + "." + c.Now().Add(time.Duration(i)*time.Second).Format(StampLayout)
		if strings.TrimSuffix(f, ".gz") != want {
			t.Errorf("rotation %d = %s, want %s[.gz]", i, f, want)
		}
	}
	checkSuffix(t, p, 20)

	// A new writer of the same log (a restarted driver) goes on after
	// the names there are.
	w = newWriter(p, Policy{MaxSize: 100, MaxFiles: 10}, c.Now, openAppend, putStatusFile)
	writeNumbered(t, w, c, 20, 4, 0)
	w.Close()
	rotated, _ = Rotated(p)
	if len(rotated) != 9 || !strings.HasPrefix(rotated[8], p+"."+c.Now().Add(10*time.Second).Format(StampLayout)) {
		t.Errorf("after a new writer, rotated = %q", rotated)
	}
	checkSuffix(t, p, 24)
}

// blockingDisk makes the compressor's writes wait, or fail with ENOSPC.
type blockingDisk struct {
	mu      sync.Mutex
	full    bool
	release chan struct{} // nil: no waiting
	entered chan struct{}
}

func (b *blockingDisk) wrap(f *os.File) io.Writer { return &blockingFile{f: f, b: b} }

type blockingFile struct {
	f *os.File
	b *blockingDisk
}

func (f *blockingFile) Write(p []byte) (int, error) {
	f.b.mu.Lock()
	full, release, entered := f.b.full, f.b.release, f.b.entered
	f.b.mu.Unlock()
	if release != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}
	if full {
		n, _ := f.f.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.f.Name(), Err: syscall.ENOSPC}
	}
	return f.f.Write(p)
}

// TestCompressionDoesNotBlock: while a compression hangs, the container's
// output goes on being written and rotated, within the file count.
func TestCompressionDoesNotBlock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	c := newClock()
	b := &blockingDisk{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := newWriter(p, Policy{MaxSize: 100, MaxFiles: 3}, c.Now, openAppend, putStatusFile)
	w.rot.tmpWriter = b.wrap
	var once sync.Once
	unblock := func() {
		once.Do(func() {
			b.mu.Lock()
			release := b.release
			b.release = nil
			b.mu.Unlock()
			close(release)
		})
	}
	defer unblock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeNumbered(t, w, c, 0, 6, time.Second) // 2 rotations: one to compress
	}()
	select {
	case <-b.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("compression did not start")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writes waited for a hung compression")
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		writeNumbered(t, w, c, 6, 40, time.Second)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writes waited for a hung compression")
	}
	if rotated, _ := Rotated(p); len(rotated) != 2 {
		t.Errorf("while compressing, rotated = %q, want 2", rotated)
	}
	unblock()
	w.Close()
	checkSuffix(t, p, 46)
	for _, n := range names(t, filepath.Dir(p)) {
		if strings.HasSuffix(n, ".tmp") {
			t.Errorf("temporary file %s left", n)
		}
	}
}

// TestCompressFull: a compression that fails (ENOSPC) leaves no partial
// .gz or temporary file and keeps the plain rotation; it is compressed
// once there is room.
func TestCompressFull(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	c := newClock()
	b := &blockingDisk{full: true}
	w := newWriter(p, Policy{MaxSize: 100, MaxFiles: 4}, c.Now, openAppend, putStatusFile)
	w.rot.tmpWriter = b.wrap
	writeNumbered(t, w, c, 0, 8, time.Second) // 3 rotations
	// Close runs the compression that was asked for.
	w.Close()
	if err := w.rot.lastErr; !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("compression on a full disk: err = %v, want ENOSPC", err)
	}
	for _, n := range names(t, filepath.Dir(p)) {
		if strings.HasSuffix(n, ".tmp") || strings.HasSuffix(n, ".gz") {
			t.Errorf("%s left by a failed compression", n)
		}
	}
	rotated, _ := Rotated(p)
	if len(rotated) != 3 {
		t.Fatalf("rotated = %q, want 3 plain", rotated)
	}
	checkSuffix(t, p, 8)

	// Room again: the next writer of the log compresses them.
	w = newWriter(p, Policy{MaxSize: 100, MaxFiles: 4}, c.Now, openAppend, putStatusFile)
	w.Close()
	rotated, _ = Rotated(p)
	if len(rotated) != 3 || !strings.HasSuffix(rotated[0], ".gz") || !strings.HasSuffix(rotated[1], ".gz") || strings.HasSuffix(rotated[2], ".gz") {
		t.Errorf("after space returned, rotated = %q", rotated)
	}
	checkSuffix(t, p, 8)
}

// TestStaleTmp: a temporary file no compressor holds (a driver killed
// while compressing) is removed by the next writer in the directory; one
// that is held is not.
func TestStaleTmp(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "0.log.20260102-030405.tmp")
	held := filepath.Join(dir, "1.log.20260102-030405.tmp")
	other := filepath.Join(dir, "notes.tmp")
	for _, f := range []string{stale, held, other} {
		if err := os.WriteFile(f, []byte("half a gzip"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	h, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := syscall.Flock(int(h.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	w := Open(filepath.Join(dir, "2.log"), 0)
	w.Close()
	if exists(stale) {
		t.Error("stale temporary file not removed")
	}
	if !exists(held) {
		t.Error("temporary file of a live compressor removed")
	}
	if !exists(other) {
		t.Error("a file that is not a log's removed")
	}
}

// TestRotatedNames: Rotated lists only rotations, oldest first, the .gz
// when both are there; RemoveAll removes every file of the log and no
// other.
func TestRotatedNames(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "0.log")
	files := []string{
		"0.log", "0.log.dropped", "0.log.1", "0.log.20260102-030406", "0.log.20260102-030405.gz",
		"0.log.20260102-030404", "0.log.20260102-030404.gz", "0.log.20260102-030407.tmp",
		"0.log.2026-01-02", "10.log", "10.log.20260102-030405.gz", "0.log.20260102-030408.zip",
	}
	for _, f := range files {
		os.WriteFile(filepath.Join(dir, f), nil, 0o640)
	}
	got, err := Rotated(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{p + ".20260102-030404.gz", p + ".20260102-030405.gz", p + ".20260102-030406"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Rotated = %q, want %q", got, want)
	}
	if got, err := Rotated(filepath.Join(dir, "none", "0.log")); err != nil || got != nil {
		t.Errorf("Rotated of a missing dir = %q, %v", got, err)
	}
	if err := RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	left := strings.Join(names(t, dir), " ")
	if want := "0.log.2026-01-02 0.log.20260102-030408.zip 10.log 10.log.20260102-030405.gz"; left != want {
		t.Errorf("after RemoveAll: %s, want %s", left, want)
	}
}

func TestDriverArg(t *testing.T) {
	const p = "/var/log/pods/a_b_c/x/0.log"
	for _, tt := range []struct {
		arg  string
		want Policy
	}{
		{DriverArg(p, Policy{MaxSize: 1234, MaxFiles: 3}), Policy{1234, 3}},
		{DriverArg(p, Policy{}), Policy{DefaultMaxSize, DefaultMaxFiles}},
		// The argument of podvisor before max files.
		{"1234:" + p, Policy{1234, DefaultMaxFiles}},
		{"0:" + p, Policy{DefaultMaxSize, DefaultMaxFiles}},
	} {
		got, pol, err := ParseDriverArg(tt.arg)
		if err != nil || got != p || pol != tt.want {
			t.Errorf("ParseDriverArg(%q) = %q %+v %v, want %q %+v", tt.arg, got, pol, err, p, tt.want)
		}
	}
	for _, bad := range []string{"", "12", "x:/a", "12:rel", "12:1:/a", "12:x:/a", "12:3:rel", "12:3"} {
		if _, _, err := ParseDriverArg(bad); err == nil {
			t.Errorf("ParseDriverArg(%q) succeeded", bad)
		}
	}
}
