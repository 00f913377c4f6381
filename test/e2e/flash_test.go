package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
)

// flashObjects and flashPods are what TestFlashIdle runs: pods that touch
// every per-pod path that could write at rest (a ConfigMap and Secret
// volume, an emptyDir, an HTTP readiness probe every second, a container
// that logs every second). Exec probes are left out: their fifos are
// containerd's, in /run/containerd/fifo, a tmpfs on a systemd host but
// the root filesystem on some test hosts, where creating them counts in
// write_bytes.
const flashObjects = `apiVersion: v1
kind: ConfigMap
metadata:
  name: flash-conf
data:
  level: "3"
---
apiVersion: v1
kind: Secret
metadata:
  name: flash-creds
stringData:
  password: flash-s3cr3t
`

func flashPod(name string, i int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: conf, configMap: {name: flash-conf}}
  - {name: creds, secret: {secretName: flash-creds}}
  - {name: scratch, emptyDir: {}}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir /www && echo ok >/www/index.html && httpd -p 8080 -h /www && while true; do echo tick %d; sleep 1; done"]
    volumeMounts:
    - {name: conf, mountPath: /conf}
    - {name: creds, mountPath: /creds}
    - {name: scratch, mountPath: /scratch}
    readinessProbe:
      httpGet: {path: /, port: 8080}
      periodSeconds: 1
      timeoutSeconds: 30 # a loaded CI host must not make it flap
  - name: quiet
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, name, i)
}

// TestFlashIdle holds DESIGN's invariant 10: at rest — pods running and
// Ready, nothing changing — podvisor writes nothing to disk. The state dir
// is a loop-mounted ext4 (write_bytes of a tmpfs or overlay is 0 whatever
// is written); relists and manifest relists run every 500 ms, so the
// window covers at least ten of every periodic task (counted from
// podvisor's debug log, not slept). Over that window podvisor's
// write_bytes (/proc/<pid>/io: bytes it sent towards a block device,
// anywhere) must not grow, and no file or directory under --state-dir may
// change; each relist of the window must have woken no worker (one
// listing of the tasks) and the log links must not have been pruned (done
// at start and after a removal only). Only podvisor's own process is measured: container output is
// written by the log drivers the shims start, the pods' own doing.
// podvisor's log goes to a pipe the test drains, as journald's would.
func TestFlashIdle(t *testing.T) {
	t.Parallel()
	d := newDaemon(t,
		"--relist-period", "500ms",
		"--manifest-relist-period", "500ms",
		"--log-level", "debug",
		"--container-log-links", filepath.Join(t.TempDir(), "containers"),
	)
	loopFS(t, d.state, 64)
	d.startPiped()
	d.writeManifest("objects.yaml", flashObjects)
	const pods = 5
	for i := range pods {
		d.writeManifest(fmt.Sprintf("flash%d.yaml", i), flashPod(fmt.Sprintf("flash%d", i), i))
	}
	for i := range pods {
		d.waitPod(fmt.Sprintf("flash%d-%s", i, node), 60*time.Second, "Ready", podReady)
	}
	pid := d.cmd.Process.Pid

	// Settled: the first relists after the pods are Ready may still
	// write (a record's first save after adoption, say); from there on,
	// nothing.
	d.waitCycles(2)
	journal := filepath.Join(d.state, "events.jsonl")
	before, beforeIO := scanTree(t, d.state), readProcIO(t, pid)
	journalBefore, _ := os.ReadFile(journal)
	logBefore, _ := os.ReadFile(d.logFile)
	t0 := time.Now()
	d.waitCycles(10)
	after, afterIO := scanTree(t, d.state), readProcIO(t, pid)
	window := time.Since(t0)
	// Each relist of the window listed the tasks and woke no worker; the
	// log links were not pruned (that is done at start and after a
	// removal).
	logAfter, _ := os.ReadFile(d.logFile)
	relists, woke, prunes := 0, 0, 0
	for _, line := range strings.Split(string(logAfter[len(logBefore):]), "\n") {
		switch {
		case strings.Contains(line, "msg=relist"):
			relists++
			if !strings.Contains(line, "woken=0") {
				woke++
				t.Logf("relist at rest woke workers: %s", line)
			}
		case strings.Contains(line, `msg="log links pruned"`):
			prunes++
		}
	}
	if relists < 10 || woke > 0 || prunes > 0 {
		t.Errorf("at rest: %d relists, %d of them woke workers (want none); log links pruned %d times (want 0)", relists, woke, prunes)
	}
	t.Logf("window %s: write_bytes +%d, wchar +%d, syscw +%d (wchar/syscw count sockets and pipes too)", window.Round(time.Millisecond),
		afterIO["write_bytes"]-beforeIO["write_bytes"], afterIO["wchar"]-beforeIO["wchar"], afterIO["syscw"]-beforeIO["syscw"])
	if n := afterIO["write_bytes"] - beforeIO["write_bytes"]; n != 0 {
		t.Errorf("podvisor wrote %d bytes towards disk in %s at rest (write_bytes)", n, window.Round(time.Millisecond))
	}
	if diff := diffTrees(before, after); len(diff) > 0 {
		t.Errorf("files under --state-dir changed at rest in %s:\n  %s", window.Round(time.Millisecond), strings.Join(diff, "\n  "))
		if b, _ := os.ReadFile(journal); len(b) > len(journalBefore) {
			t.Logf("events journaled meanwhile:\n%s", b[len(journalBefore):])
		}
	}
	for i := range pods {
		if p, err := d.pod(fmt.Sprintf("flash%d-%s", i, node)); err != nil || !podReady(p) {
			t.Errorf("pod flash%d not Ready at the end of the window (%v)", i, err)
		}
	}

	// At rest, of podvisor's own binary only what it uses stays
	// resident: start-up's pages (package initialisation touches most
	// of the binary) were given back once the pods settled, and with
	// fault-around off (this host's kernel can) ten relists since
	// brought back only the pages they touched: about 14% of the
	// read-only mappings here, 31% with fault-around on, three quarters
	// without the release.
	d.waitLogLine("gave back start-up memory", `when="pods settled"`, "faultAround=off")
	res, size := exeResidency(t, pid)
	t.Logf("podvisor's binary at rest: %d KiB of %d KiB mapped read-only resident", res>>10, size>>10)
	if res > size/5 {
		t.Errorf("%d KiB of podvisor's %d KiB read-only binary mappings resident at rest: start-up's pages were not given back, or came back with their neighbours", res>>10, size>>10)
	}

	// A pod added later: once it is Ready, what its start touched is
	// given back too.
	off := d.logSize()
	d.writeManifest("flash-late.yaml", flashPod("flashlate", pods))
	d.waitPod("flashlate-"+node, 60*time.Second, "Ready", podReady)
	d.poll("start-up memory given back after a pod was added", 20*time.Second, func() (bool, string) {
		return d.logHasLine(off, "gave back start-up memory", `when="pods added and settled"`), "not logged since the pod was written"
	})
}

// exeResidency sums the resident and mapped bytes of the read-only
// mappings of pid's executable (/proc/<pid>/smaps).
func exeResidency(t *testing.T, pid int) (resident, size uint64) {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4: // a mapping's first line
			in = len(f) >= 6 && strings.Join(f[5:], " ") == exe && !strings.Contains(f[1], "w")
		case in && len(f) == 3 && (f[0] == "Size:" || f[0] == "Rss:"):
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			if f[0] == "Size:" {
				size += kb << 10
			} else {
				resident += kb << 10
			}
		}
	}
	if size == 0 {
		t.Fatalf("no read-only mapping of %s in /proc/%d/smaps", exe, pid)
	}
	return resident, size
}

// waitCycles waits until podvisor has done n more of each of its periodic
// passes, as its debug log counts them.
func (d *daemon) waitCycles(n int) {
	d.t.Helper()
	base := d.cycleCounts()
	d.poll(fmt.Sprintf("%d more cycles of every periodic task", n), 60*time.Second, func() (bool, string) {
		now := d.cycleCounts()
		var short []string
		for _, k := range slices.Sorted(maps.Keys(cycleLines)) {
			if now[k]-base[k] < n {
				short = append(short, fmt.Sprintf("%s: %d", k, now[k]-base[k]))
			}
		}
		return len(short) == 0, strings.Join(short, ", ")
	})
}

// cycleLines are the debug log messages each periodic task logs once per
// pass.
var cycleLines = map[string]string{
	"relist":          `msg=relist`,
	"manifest relist": `msg="manifest relist"`,
}

func (d *daemon) cycleCounts() map[string]int {
	counts := map[string]int{}
	f, err := os.Open(d.logFile)
	if err != nil {
		return counts
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		for k, m := range cycleLines {
			if bytes.Contains(sc.Bytes(), []byte(m)) {
				counts[k]++
			}
		}
	}
	return counts
}

// startPiped is start with podvisor's log sent through a pipe that the
// test drains into the log file, so that podvisor itself writes no file
// for its log (as under systemd, where journald reads its stderr).
func (d *daemon) startPiped() {
	d.t.Helper()
	logf, err := os.OpenFile(d.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		d.t.Fatal(err)
	}
	d.cmd = exec.Command(podvisorBin, d.args()...)
	d.cmd.Stdout, d.cmd.Stderr = pw, pw
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	pw.Close()
	go func() {
		io.Copy(logf, pr)
		logf.Close()
		pr.Close()
	}()
	d.exited = make(chan error, 1)
	cmd := d.cmd
	go func() { d.exited <- cmd.Wait() }()
	c := api.NewClient(d.sock)
	d.poll("podvisor API to answer", 30*time.Second, func() (bool, string) {
		select {
		case err := <-d.exited:
			d.exited <- err
			return false, fmt.Sprintf("podvisor exited: %v", err)
		default:
		}
		err := c.Healthz(context.Background())
		return err == nil, fmt.Sprint(err)
	})
}

// fileState is what scanTree keeps of a file or directory.
type fileState struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	ctime syscall.Timespec
	ino   uint64
}

// scanTree returns the state of everything under dir (not crossing into
// other mounts: a pod's tmpfs Secret volume is not the state disk).
func scanTree(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	var root syscall.Stat_t
	if err := syscall.Stat(dir, &root); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile: the diff shows it
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return nil
		}
		if st.Dev != root.Dev {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		out[p] = fileState{mode: fi.Mode(), size: st.Size, mtime: fi.ModTime(), ctime: st.Ctim, ino: st.Ino}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffTrees names what was added, removed or changed between two scans.
func diffTrees(before, after map[string]fileState) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, "removed "+p)
		case a != b:
			out = append(out, fmt.Sprintf("changed %s (size %d→%d, mtime %s→%s, inode %d→%d)", p, b.size, a.size,
				b.mtime.Format("15:04:05.000"), a.mtime.Format("15:04:05.000"), b.ino, a.ino))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "added "+p)
		}
	}
	slices.Sort(out)
	return out
}

// readProcIO reads /proc/<pid>/io.
func readProcIO(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err == nil {
			out[k] = n
		}
	}
	return out
}
