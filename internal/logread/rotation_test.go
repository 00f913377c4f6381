package logread

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
)

// writerLine is the content of line i as the writer tests write it: with
// the writer's clock stopped at t0, each record is 50 bytes, so a file of
// 100 bytes holds two lines and the third rotates it.
func writerLine(i int) string { return fmt.Sprintf("line %03d xxxxxxxxxx", i) }

// writeLines writes lines from..to through the log driver's own writer
// (crilog), with the rotation policy p, its clock stopped at t0 (so each
// rotation takes the next second's stamp), and closes it, which waits for
// its compressions: the files are as the driver leaves them.
func writeLines(t *testing.T, live string, p crilog.Policy, from, to int) {
	t.Helper()
	w := crilog.OpenPolicy(live, p)
	w.Now = func() time.Time { return t0 }
	for i := from; i <= to; i++ {
		if err := w.WriteRecord("stdout", false, []byte(writerLine(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFollowWriterRotations: the log driver's writer (crilog, 2 lines a
// file) rotates several times between two looks of Follow, which is held
// in its Idle call meanwhile; Follow then emits every line still kept
// exactly once, in order, and says where lines may be missing only when
// rotated files it had not read were removed.
func TestFollowWriterRotations(t *testing.T) {
	missing := "stderr podvisor: log output may be missing: the log rotated more often than it was read, and rotated files were removed"
	lines := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, "stdout "+writerLine(i))
		}
		return out
	}
	tests := []struct {
		name     string
		maxFiles int
		held     int // lines written while Follow is held (after lines 1-4)
		want     []string
	}{{
		// The held file (lines 3, 4) is rotated and compressed, the
		// next one rotated too.
		name: "two rotations, five files kept", maxFiles: 5, held: 4,
		want: lines(1, 8),
	}, {
		// The held file is removed (one rotated file kept); the one
		// after it is still there and is read.
		name: "two rotations, two files kept", maxFiles: 2, held: 4,
		want: lines(1, 8),
	}, {
		name: "three rotations, three files kept", maxFiles: 3, held: 6,
		want: lines(1, 10),
	}, {
		// Lines 5 and 6 were rotated out before Follow could read
		// them: it says so.
		name: "three rotations, two files kept", maxFiles: 2, held: 6,
		want: append(append(lines(1, 4), missing), lines(7, 10)...),
	}, {
		name: "five rotations, three files kept", maxFiles: 3, held: 10,
		want: append(append(lines(1, 4), missing), lines(9, 14)...),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := filepath.Join(t.TempDir(), "pod", "c", "0.log")
			p := crilog.Policy{MaxSize: 100, MaxFiles: tt.maxFiles}
			// One rotation before Follow starts: line 1 and 2 rotated,
			// 3 and 4 in the live file.
			writeLines(t, live, p, 1, 4)

			f := startStepped(t, live)
			f.waitIdle()
			if g := f.got(); fmt.Sprint(g) != fmt.Sprint(lines(1, 4)) {
				t.Fatalf("before the rotations: got %q", g)
			}
			// Held in Idle: the driver writes on, rotating its file
			// held/2 times.
			writeLines(t, live, p, 5, 4+tt.held)
			ls, _ := os.ReadDir(filepath.Dir(live))
			var files []string
			for _, e := range ls {
				files = append(files, e.Name())
			}
			t.Logf("files as Follow looks again: %s", strings.Join(files, " "))
			f.resume(stopAtIdle)
			f.waitIdle()
			f.end()
			if g := f.got(); fmt.Sprint(g) != fmt.Sprint(tt.want) {
				t.Errorf("got  %q\nwant %q", g, tt.want)
			}
		})
	}
}

// TestReadRemovedBeforeRead: a rotated file listed but removed before it
// could be read leaves a line that says so.
func TestReadRemovedBeforeRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pod", "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "0.log")
	writeFile(t, live+".20261201-100001", rec(1, "stdout", "F", "one"))
	writeFile(t, live+".20261201-100002", rec(2, "stdout", "F", "two"))
	writeFile(t, live, rec(3, "stdout", "F", "three"))
	root, err := openRoot(live)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot(root)
	d, err := openContainerDir(root, live)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	emit, got := collect()
	s := newSink(Options{Tail: -1}, emit)
	if err := readRotated(d, "0.log.20261201-100001", s); err != nil {
		t.Fatal(err)
	}
	os.Remove(live + ".20261201-100002")
	if err := readRotated(d, "0.log.20261201-100002", s); err != nil {
		t.Fatal(err)
	}
	want := []string{"stdout one", "stderr podvisor: log output missing: rotated log file 0.log.20261201-100002 was removed before it was read"}
	if g := got(); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("got  %q\nwant %q", g, want)
	}
}

// TestFollowRotatedWhileLiveMissing: Follow looks while the live file is
// missing (renamed away, the next not made yet), and before it looks
// again the next live file is made and rotated once (nothing lost: its
// lines are read, nothing said) or twice with one rotated file kept (its
// lines are gone: Follow says so).
func TestFollowRotatedWhileLiveMissing(t *testing.T) {
	missing := "stderr podvisor: log output may be missing: the log rotated more often than it was read, and rotated files were removed"
	tests := []struct {
		name      string
		rotations int
		want      []string
	}{
		{"one rotation", 1, []string{"stdout l0", "stdout l1", "stdout l2", "stdout l4"}},
		{"two rotations, one kept", 2, []string{"stdout l0", "stdout l1", missing, "stdout l3", "stdout l4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pod", "c")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			live := filepath.Join(dir, "0.log")
			stamp := func(n int) string { return fmt.Sprintf("%s.20261201-10000%d", live, n) }
			writeFile(t, stamp(0), rec(0, "stdout", "F", "l0"))
			writeFile(t, live, rec(1, "stdout", "F", "l1"))

			f := startStepped(t, live)
			f.waitIdle()
			// Rotated away; Follow looks with no live file.
			rename(t, live, stamp(1))
			f.resume(stopAtIdle)
			f.waitIdle()
			// The writer's next files, one rotated file kept.
			for i := 2; i < 2+tt.rotations; i++ {
				writeFile(t, live, rec(i, "stdout", "F", fmt.Sprintf("l%d", i)))
				rename(t, live, stamp(i))
				for j := 1; j < i; j++ {
					os.Remove(stamp(j))
				}
			}
			writeFile(t, live, rec(4, "stdout", "F", "l4"))
			f.resume(stopAtIdle)
			f.waitIdle()
			f.end()
			if g := f.got(); fmt.Sprint(g) != fmt.Sprint(tt.want) {
				t.Errorf("got  %q\nwant %q", g, tt.want)
			}
		})
	}
}
