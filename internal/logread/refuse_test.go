package logread

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// secretLog is a host file in CRI form: were it followed, its line would be
// served as the container's.
var secretLog = rec(1, "stdout", "F", "SECRET root:x:0:0")

// refusalCases plant, in a log directory laid out as podvisor's
// (<log dir>/<pod>/<container>/0.log, a good rotated file beside it),
// something that is not the container's log, and name the live file to
// read.
var refusalCases = []struct {
	name  string
	plant func(t *testing.T, host, logs string) string
}{{
	name: "the live file a symlink to a host file",
	plant: func(t *testing.T, host, logs string) string {
		live := filepath.Join(logs, "pod", "c", "0.log")
		os.Remove(live)
		symlink(t, filepath.Join(host, "0.log"), live)
		return live
	},
}, {
	name: "a rotated file a symlink to a host file",
	plant: func(t *testing.T, host, logs string) string {
		live := filepath.Join(logs, "pod", "c", "0.log")
		symlink(t, filepath.Join(host, "0.log"), live+".20261201-100002")
		return live
	},
}, {
	name: "a compressed rotated file a symlink",
	plant: func(t *testing.T, host, logs string) string {
		live := filepath.Join(logs, "pod", "c", "0.log")
		writeGz(t, filepath.Join(host, "old.gz"), secretLog)
		symlink(t, filepath.Join(host, "old.gz"), live+".20261201-100002.gz")
		return live
	},
}, {
	name: "the container's directory a symlink to a host directory",
	plant: func(t *testing.T, host, logs string) string {
		rename(t, filepath.Join(logs, "pod", "c"), filepath.Join(logs, "pod", "c.old"))
		symlink(t, host, filepath.Join(logs, "pod", "c"))
		return filepath.Join(logs, "pod", "c", "0.log")
	},
}, {
	name: "the pod's directory a symlink to a host directory",
	plant: func(t *testing.T, host, logs string) string {
		if err := os.MkdirAll(filepath.Join(host, "c"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(host, "c", "0.log"), secretLog)
		rename(t, filepath.Join(logs, "pod"), filepath.Join(logs, "pod.old"))
		symlink(t, host, filepath.Join(logs, "pod"))
		return filepath.Join(logs, "pod", "c", "0.log")
	},
}, {
	name: "the live file a FIFO",
	plant: func(t *testing.T, host, logs string) string {
		live := filepath.Join(logs, "pod", "c", "0.log")
		os.Remove(live)
		if err := unix.Mkfifo(live, 0o644); err != nil {
			t.Fatal(err)
		}
		return live
	},
}, {
	name: "a rotated file a FIFO",
	plant: func(t *testing.T, host, logs string) string {
		live := filepath.Join(logs, "pod", "c", "0.log")
		if err := unix.Mkfifo(live+".20261201-100002", 0o644); err != nil {
			t.Fatal(err)
		}
		return live
	},
}, {
	name: "a rotated file a directory",
	plant: func(t *testing.T, host, logs string) string {
		live := filepath.Join(logs, "pod", "c", "0.log")
		if err := os.Mkdir(live+".1", 0o755); err != nil {
			t.Fatal(err)
		}
		return live
	},
}}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// plantedLogs makes a host directory holding a CRI log ("0.log") and a
// log directory with one container's log (a rotated file and the live
// one), then plants what c says.
func plantedLogs(t *testing.T, plant func(t *testing.T, host, logs string) string) string {
	dir := t.TempDir()
	host, logs := filepath.Join(dir, "host"), filepath.Join(dir, "logs")
	for _, d := range []string{host, filepath.Join(logs, "pod", "c")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(host, "0.log"), secretLog)
	live := filepath.Join(logs, "pod", "c", "0.log")
	writeFile(t, live+".20261201-100001", rec(1, "stdout", "F", "one"))
	writeFile(t, live, rec(3, "stdout", "F", "three"))
	return plant(t, host, logs)
}

// checkRefusals reads and follows each planted log: both fail, naming
// ErrRefused, within a bound (a FIFO does not block them), and nothing of
// the host's file is emitted.
func checkRefusals(t *testing.T) {
	for _, c := range refusalCases {
		t.Run(c.name, func(t *testing.T) {
			live := plantedLogs(t, c.plant)
			for _, followed := range []bool{false, true} {
				emit, got := collect()
				done := make(chan error, 1)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				go func() {
					if followed {
						done <- Follow(ctx, live, Options{Tail: -1}, Watch{Poll: time.Millisecond}, emit)
					} else {
						done <- Read(live, Options{Tail: -1}, emit)
					}
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("follow %v: still reading after 10s; got %q", followed, got())
				}
				cancel()
				if !errors.Is(err, ErrRefused) {
					t.Errorf("follow %v: err = %v, want ErrRefused; got %q", followed, err, got())
				} else {
					t.Logf("follow %v: %v", followed, err)
				}
				if g := strings.Join(got(), "\n"); strings.Contains(g, "SECRET") {
					t.Errorf("follow %v: the host's file was served: %q", followed, g)
				}
			}
		})
	}
}

// TestRefused: a symlink planted as the live file, as a rotated file, or
// in place of the container's or the pod's log directory, and a FIFO or
// a directory where a log file is, are refused (an error naming
// ErrRefused), never followed or read; and a good log laid out the same
// way is read.
func TestRefused(t *testing.T) {
	checkRefusals(t)
	live := plantedLogs(t, func(t *testing.T, host, logs string) string { return filepath.Join(logs, "pod", "c", "0.log") })
	emit, got := collect()
	if err := Read(live, Options{Tail: -1}, emit); err != nil || strings.Join(got(), ",") != "stdout one,stdout three" {
		t.Errorf("Read = %v, %q; want one, three", err, got())
	}
}

// TestLongLineSkipped: a line far longer than any record of the writer's
// (a planted file) is skipped, not held whole, and the records after it
// are read.
func TestLongLineSkipped(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "0.log")
	writeFile(t, live, rec(1, "stdout", "F", "a")+rec(2, "stdout", "F", strings.Repeat("x", 4*maxRecord))+rec(3, "stdout", "F", "b"))
	emit, got := collect()
	if err := Read(live, Options{Tail: -1}, emit); err != nil || strings.Join(got(), ",") != "stdout a,stdout b" {
		t.Errorf("Read = %v, %.100q; want a, b", err, got())
	}
}
