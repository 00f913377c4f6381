package e2e

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// rotatingManifest prints lines "line 1".."line n" of about 100 bytes, then
// "done", then waits.
func rotatingManifest(n int) string {
	script := fmt.Sprintf(`trap 'exit 0' TERM
pad=$(printf '%%090d' 0)
i=0
while [ $i -lt %d ]; do i=$((i+1)); echo "line $i $pad"; done
echo done
while true; do sleep 1; done`, n)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: rotating
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
`, script)
}

// readAnyLog parses a plain or gzip CRI log.
func readAnyLog(path string) ([]crilog.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	var recs []crilog.Record
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rec, err := crilog.Parse(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, len(recs)+1, err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// TestLogRotate: a container's log rotates at --container-log-max-size
// (given as a quantity) into kubelet's <n>.log.<YYYYMMDD-HHMMSS> names, the
// older rotations gzipped, at most --container-log-max-files files kept,
// and what they hold together is the end of the output, whole and in
// order. The container's /var/log/containers link (in a directory of the
// test's own) points at the live file while the container exists, and is
// gone with the pod.
func TestLogRotate(t *testing.T) {
	t.Parallel()
	links := filepath.Join(os.TempDir(), "pv-e2e-links-"+randHex(4))
	t.Cleanup(func() { os.RemoveAll(links) })
	d := newDaemon(t, "--container-log-max-size", "16Ki", "--container-log-max-files", "4", "--container-log-links", links)
	// A link a podvisor left for a container that is gone, and one that
	// is not podvisor's (kubelet's, into its own log dir).
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(links, "old_default_main-"+strings.Repeat("ab", 32)+".log")
	foreign := filepath.Join(links, "kube_kube-system_main-"+strings.Repeat("cd", 32)+".log")
	for link, target := range map[string]string{stale: filepath.Join(d.logs, "default_old_u", "main", "0.log"), foreign: "/var/log/pods/kube-system_kube_u/main/0.log"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	d.start()
	d.poll("the stale link to be removed at start", 10*time.Second, func() (bool, string) {
		_, err := os.Lstat(stale)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if _, err := os.Lstat(foreign); err != nil {
		t.Fatalf("a link into another log dir was touched: %v", err)
	}
	const n = 3000 // about 300 KB: some 18 rotations
	d.writeManifest("rotating.yaml", rotatingManifest(n))
	const name = "rotating-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	dir := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", name, p.UID), "main")
	live := filepath.Join(dir, "0.log")

	var kept []string
	d.poll("the output to end in rotated, compressed files", 60*time.Second, func() (bool, string) {
		rotated, err := crilog.Rotated(live)
		if err != nil {
			return false, err.Error()
		}
		ents, _ := os.ReadDir(dir)
		var files []string
		for _, e := range ents {
			files = append(files, e.Name())
		}
		// The live file, three rotations, the status file; no temporary
		// file of a compression.
		if len(rotated) != 3 || len(files) != 5 {
			return false, fmt.Sprintf("rotated %q; files %q", rotated, files)
		}
		for i, f := range rotated {
			stamp := strings.TrimSuffix(strings.TrimPrefix(f, live+"."), ".gz")
			if _, err := time.Parse(crilog.StampLayout, stamp); err != nil {
				return false, fmt.Sprintf("rotated file %s is not <log>.<YYYYMMDD-HHMMSS>[.gz]", f)
			}
			if gz := strings.HasSuffix(f, ".gz"); gz != (i < 2) {
				return false, fmt.Sprintf("rotated %q: want all but the most recent gzipped", rotated)
			}
		}
		recs, err := readAnyLog(live)
		if err != nil || len(recs) == 0 || string(recs[len(recs)-1].Content) != "done" {
			return false, fmt.Sprintf("live file does not end with done (%v)", err)
		}
		kept = nil
		for _, f := range append(rotated, live) {
			recs, err := readAnyLog(f)
			if err != nil {
				return false, err.Error()
			}
			for _, r := range recs {
				kept = append(kept, string(r.Content))
			}
		}
		return true, ""
	})
	st, err := os.Stat(live)
	if err != nil || st.Size() > 16*1024 {
		t.Errorf("live file: %v, %v; want at most 16 KiB", st, err)
	}
	// Whole lines, the last ones printed, in order: the four files hold
	// between three and four files' worth (~160 lines of 110 bytes each).
	var first int
	if _, err := fmt.Sscanf(kept[0], "line %d", &first); err != nil {
		t.Fatalf("first kept record %q", kept[0])
	}
	for i, s := range kept[:len(kept)-1] {
		var k int
		if _, err := fmt.Sscanf(s, "line %d ", &k); err != nil || k != first+i || len(s) != len(fmt.Sprintf("line %d ", k))+90 {
			t.Fatalf("kept record %d = %q, want line %d", i, s, first+i)
		}
	}
	if last := first + len(kept) - 2; last != n {
		t.Errorf("kept lines %d..%d, want the last to be %d", first, last, n)
	}
	if len(kept) < 3*16*1024/120 || len(kept) > 4*16*1024/100 {
		t.Errorf("kept %d records, want what 3 to 4 files of 16 KiB hold", len(kept))
	}

	// The link, as kubelet names it, to the live file.
	id := strings.TrimPrefix(containerID(p, "main"), "containerd://")
	link := filepath.Join(links, fmt.Sprintf("%s_default_main-%s.log", name, id))
	if target, err := os.Readlink(link); err != nil || target != live {
		ents, _ := os.ReadDir(links)
		t.Fatalf("link %s → %q, %v; want → %s (links dir: %v)", link, target, err, live, ents)
	}
	if b, err := os.ReadFile(link); err != nil || !strings.Contains(string(b), " F done\n") {
		t.Errorf("reading through the link: %v", err)
	}

	d.removeManifest("rotating.yaml")
	d.waitGone(name, 60*time.Second)
	d.poll("the link to go with the pod", 10*time.Second, func() (bool, string) {
		_, err := os.Lstat(link)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if _, err := os.Lstat(foreign); err != nil {
		t.Fatalf("a link into another log dir was touched: %v", err)
	}
}

// burstManifest prints 100 numbered lines of about 90 bytes every 50 ms,
// recording the latest number in /beat/n.
func burstManifest(beat string) string {
	script := `trap 'exit 0' TERM
pad=$(printf '%080d' 0)
i=0
while true; do
  j=0; while [ $j -lt 100 ]; do j=$((j+1)); i=$((i+1)); echo "burst $i $pad"; done
  echo $i > /beat/n; sleep 0.05
done`
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: burst
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
`, script, beat)
}

// fill writes a file on dir's file system until it is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestLogRotateFullDisk: with a rotating log on a file system that fills
// up, the container goes on running and writing, podvisor goes on working
// and says so with a LogDropped event while the disk is full, a failed
// compression leaves no partial file; when space returns, logging resumes
// after a gap record and the rotations are compressed again.
func TestLogRotateFullDisk(t *testing.T) {
	t.Parallel()
	var mnt string
	t.Cleanup(func() {
		if mnt != "" {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	d := newDaemon(t, "--container-log-max-size", "32Ki", "--container-log-max-files", "4")
	if err := os.MkdirAll(d.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", d.logs, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Fatalf("mount a 1 MiB tmpfs as the log dir: %v", err)
	}
	mnt = d.logs
	beat := filepath.Join(d.dir, "beat")
	if err := os.MkdirAll(beat, 0o755); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("burst.yaml", burstManifest(beat))
	const name = "burst-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	dir := filepath.Join(d.logs, fmt.Sprintf("default_%s_%s", name, p.UID), "main")
	live := filepath.Join(dir, "0.log")
	heartbeat := func() int {
		b, _ := os.ReadFile(filepath.Join(beat, "n"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	// kubelet's shape: the live file and three rotations, the older two
	// gzipped.
	rotatedShape := func() (bool, string) {
		rotated, err := crilog.Rotated(live)
		if err != nil {
			return false, err.Error()
		}
		ents, _ := os.ReadDir(dir)
		var files []string
		for _, e := range ents {
			files = append(files, e.Name())
		}
		ok := len(rotated) == 3 && strings.HasSuffix(rotated[0], ".gz") && strings.HasSuffix(rotated[1], ".gz") &&
			!strings.HasSuffix(rotated[2], ".gz") && len(files) == 5
		return ok, fmt.Sprintf("rotated %q; files %q", rotated, files)
	}
	d.poll("the log to rotate", 60*time.Second, rotatedShape)

	// The disk fills up.
	filler := filepath.Join(d.logs, "filler")
	fill(t, filler)
	d.poll("the log driver to report drops", 30*time.Second, func() (bool, string) {
		dr, err := crilog.ReadDrops(live)
		return err == nil && dr.Lines > 0, fmt.Sprintf("drops %+v, %v; %d bytes free", dr, err, freeBytes(t, d.logs))
	})
	// podvisor tells while the disk is still full.
	d.poll("a LogDropped event while the disk is full", 20*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "LogDropped", "no space left on device")
		return n > 0, fmt.Sprintf("events %q", msgs)
	})
	n0 := heartbeat()
	d.poll("the container to go on writing with its log full", 60*time.Second, func() (bool, string) {
		n := heartbeat()
		return n >= n0+5000, fmt.Sprintf("at line %d, was at %d when the disk filled", n, n0)
	})
	if free := freeBytes(t, d.logs); free > 64*1024 {
		t.Fatalf("%d bytes free on the log file system: it was never full", free)
	}
	d.waitPod(name, 10*time.Second, "Running, never restarted", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 0
	})
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			// A compression under way may hold one for a moment.
			d.poll("no temporary file on a full disk", 5*time.Second, func() (bool, string) {
				_, err := os.Stat(filepath.Join(dir, e.Name()))
				return os.IsNotExist(err), e.Name()
			})
		}
	}

	// Space returns.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	nBack := heartbeat()
	d.poll("logging to resume after a gap record", 30*time.Second, func() (bool, string) {
		rotated, _ := crilog.Rotated(live)
		var recs []crilog.Record
		for _, f := range append(rotated, live) {
			r, err := readAnyLog(f)
			if err != nil {
				return false, err.Error()
			}
			recs = append(recs, r...)
		}
		gap := false
		for _, r := range recs {
			if strings.HasPrefix(string(r.Content), "podvisor: log output dropped: ") {
				gap = true
				continue
			}
			var n int
			if _, err := fmt.Sscanf(string(r.Content), "burst %d", &n); err == nil && n > nBack && gap {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d records kept, gap record seen %v, none after line %d after it", len(recs), gap, nBack)
	})
	d.poll("kubelet's shape again, with no temporary file", 60*time.Second, rotatedShape)
	dr, err := crilog.ReadDrops(live)
	if err != nil || dr.Gaps == 0 || dr.Reason != "write: no space left on device" {
		t.Errorf("status = %+v, %v; want drops for a full disk", dr, err)
	}
	if n, msgs := d.eventCount(name, "LogDropped", ""); int64(n) > dr.Gaps {
		t.Errorf("%d LogDropped events for %d episodes of drops, want at most one each: %q", n, dr.Gaps, msgs)
	}
	d.waitPod(name, 10*time.Second, "Running, never restarted", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount == 0
	})
}
