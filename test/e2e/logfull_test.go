package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// chattyScript prints numbered lines as fast as it can, recording the
// latest number in /beat/n, until /beat/slow exists; then it says so in
// /beat/mode and goes on ten lines a second.
const chattyScript = `trap 'exit 0' TERM
pad=$(printf '%080d' 0)
i=0
while [ ! -e /beat/slow ]; do i=$((i+1)); echo "fast $i $pad"; echo $i > /beat/n; done
echo slow > /beat/mode
while true; do i=$((i+1)); echo "slow $i"; echo $i > /beat/n; sleep 0.1; done`

func chattyManifest(beat string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: chatty
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts:
    - {name: beat, mountPath: /beat}
  volumes:
  - name: beat
    hostPath: {path: %s, type: Directory}
`, chattyScript, beat)
}

// TestLogFullDisk: a container whose log file system fills up goes on
// running and writing (it never blocks on its log), the drops are counted
// beside the log, and when space returns logging resumes with a gap record
// that says what was dropped.
func TestLogFullDisk(t *testing.T) {
	// Registered before the daemon's cleanup, so it runs after it: the
	// pods are gone before their log file system is.
	var mnt string
	t.Cleanup(func() {
		if mnt != "" {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	d := newDaemon(t)
	if err := os.MkdirAll(d.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", d.logs, "tmpfs", 0, "size=2m,mode=0755"); err != nil {
		t.Fatalf("mount a 2 MiB tmpfs as the log dir: %v", err)
	}
	mnt = d.logs
	beat := filepath.Join(d.dir, "beat")
	if err := os.MkdirAll(beat, 0o755); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("chatty.yaml", chattyManifest(beat))
	const name = "chatty-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	logPath := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", name, p.UID), "main", "0.log")
	// The container rewrites the heartbeat in place: a read can find it
	// empty.
	heartbeat := func() int {
		var n int
		d.poll("a line number in the heartbeat file", 10*time.Second, func() (bool, string) {
			b, err := os.ReadFile(filepath.Join(beat, "n"))
			if err == nil {
				n, err = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			return err == nil && n > 0, fmt.Sprintf("%q: %v", b, err)
		})
		return n
	}

	// The log file system fills up; the driver says it drops output while
	// the disk is still full.
	d.poll("the log driver to report drops", 60*time.Second, func() (bool, string) {
		dr, err := crilog.ReadDrops(logPath)
		return err == nil && dr.Lines > 0, fmt.Sprintf("drops %+v, %v; %d bytes free", dr, err, freeBytes(t, d.logs))
	})

	// The container is not blocked on its log: it writes 20,000 more lines
	// (about 2 MB, many times what the pipe holds and all the disk had).
	n0 := heartbeat()
	d.poll("the container to go on writing with its log full", 60*time.Second, func() (bool, string) {
		n := heartbeat()
		return n >= n0+20000, fmt.Sprintf("at line %d, was at %d when the disk filled", n, n0)
	})
	if free := freeBytes(t, d.logs); free > 64*1024 {
		t.Fatalf("%d bytes free on the log file system: it was never full", free)
	}
	d.waitPod(name, 10*time.Second, "Running, never restarted", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 0
	})

	// Output slows down, and space returns.
	if err := os.WriteFile(filepath.Join(beat, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.poll("the container to slow down", 20*time.Second, func() (bool, string) {
		_, err := os.Stat(filepath.Join(beat, "mode"))
		return err == nil, fmt.Sprint(err)
	})
	nSlow := heartbeat()
	if err := unix.Mount("tmpfs", d.logs, "tmpfs", unix.MS_REMOUNT, "size=8m,mode=0755"); err != nil {
		t.Fatalf("grow the log file system: %v", err)
	}

	// Logging resumes: a gap record, then lines printed after space
	// returned, and every line in the file is a whole record.
	var gaps crilog.Drops
	d.poll("logging to resume after a gap record", 20*time.Second, func() (bool, string) {
		recs, err := readLog(logPath)
		if err != nil {
			return false, err.Error()
		}
		gaps = crilog.Drops{}
		resumed := false
		for _, r := range recs {
			var bytes, lines int64
			if _, err := fmt.Sscanf(string(r.Content), "podvisor: log output dropped: %d bytes in %d lines ", &bytes, &lines); err == nil && r.Stream == "stderr" {
				gaps.Lines += lines
				gaps.Bytes += bytes
				resumed = false
				continue
			}
			var n int
			if _, err := fmt.Sscanf(string(r.Content), "slow %d", &n); err == nil && n > nSlow && gaps.Lines > 0 {
				resumed = true
			}
		}
		return resumed, fmt.Sprintf("%d records, %d lines reported dropped, no slow line after line %d after the last gap record", len(recs), gaps.Lines, nSlow)
	})

	// Every line the container printed is in the log or counted in the
	// gap record before the next line it printed that is.
	recs, err := readLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var prev, pending int64
	for i, r := range recs {
		var lines, bytes, n int64
		if _, err := fmt.Sscanf(string(r.Content), "podvisor: log output dropped: %d bytes in %d lines ", &bytes, &lines); err == nil {
			pending += lines
			continue
		}
		if _, err := fmt.Sscanf(string(r.Content), "fast %d", &n); err != nil {
			if _, err := fmt.Sscanf(string(r.Content), "slow %d", &n); err != nil {
				t.Fatalf("record %d: unexpected %q", i, r.Content)
			}
		}
		if n != prev+pending+1 {
			t.Fatalf("record %d is line %d after line %d and %d lines reported dropped", i, n, prev, pending)
		}
		prev, pending = n, 0
	}

	// The status file counts every dropped line the gap records report,
	// at least the 20,000 the container wrote while the disk was full.
	var dr crilog.Drops
	d.poll("the status file to agree with the gap records", 10*time.Second, func() (bool, string) {
		var err error
		dr, err = crilog.ReadDrops(logPath)
		return err == nil && dr.Lines == gaps.Lines && dr.Bytes == gaps.Bytes,
			fmt.Sprintf("status %+v, %v; gap records %d lines, %d bytes", dr, err, gaps.Lines, gaps.Bytes)
	})
	if dr.Lines < 15000 || dr.Bytes < 80*dr.Lines || dr.Reason != "write: no space left on device" ||
		dr.Since.IsZero() || dr.Last.Before(dr.Since) {
		t.Errorf("status = %+v, want over 15,000 lines of over 80 bytes dropped for a full disk", dr)
	}
	d.waitPod(name, 10*time.Second, "Running, never restarted", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 0
	})
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// readLog parses every line of a CRI log; a line that is not a record (a
// torn write) is an error.
func readLog(path string) ([]crilog.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []crilog.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	for sc.Scan() {
		r, err := crilog.Parse(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", len(recs)+1, err)
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}
