package e2e

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
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
	d.start()
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
}
