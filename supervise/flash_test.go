package supervise

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/inotify"
	"github.com/podvisor/podvisor/internal/layout"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// fileID is what changes when a file is written or replaced.
type fileID struct {
	ino   uint64
	size  int64
	mtime syscall.Timespec
	ctime syscall.Timespec
}

func statID(t *testing.T, path string) fileID {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileID{st.Ino, st.Size, st.Mtim, st.Ctim}
}

// TestRecordUnwrittenAtRest holds DESIGN's invariant 10 for pod records:
// a running pod's worker, woken by relist after relist, writes its record
// once and then never again while nothing changes (atomicfile would give
// the record a new inode, and its directory a new mtime, at each write).
func TestRecordUnwrittenAtRest(t *testing.T) {
	e := newEnv(t)
	p := testPod("rest", v1.RestartPolicyAlways, []string{"init"}, "a", "b")
	w := e.worker(p)
	for range 4 { // the init container runs and exits, the apps start
		e.step(w)
		if id := e.rt.running()["init"]; id != "" {
			e.rt.exit(id, 0)
		}
	}
	if r := e.rt.running(); r["a"] == "" || r["b"] == "" {
		t.Fatalf("pod not running: %v", r)
	}
	e.step(w) // settled
	rec := e.s.layout.RecordFile(string(p.UID))
	// Held by a second name, the record's inode cannot be reused by a
	// replacement written within the same clock tick.
	if err := os.Link(rec, rec+".held"); err != nil {
		t.Fatal(err)
	}
	before, dirBefore := statID(t, rec), statID(t, filepath.Dir(rec))
	for range 30 {
		e.clock.Step(10 * time.Second)
		w.inbox.send(wakeMsg{})
		e.step(w)
	}
	if after := statID(t, rec); after != before {
		t.Errorf("record rewritten at rest: %+v → %+v", before, after)
	}
	if after := statID(t, filepath.Dir(rec)); after != dirBefore {
		t.Errorf("record's directory changed at rest: %+v → %+v", dirBefore, after)
	}
}

// TestLogLinksUntouchedAtRest: the relist's pass over the container log
// links neither remakes nor touches a link that is there.
func TestLogLinksUntouchedAtRest(t *testing.T) {
	root := t.TempDir()
	logDir, links := filepath.Join(root, "pods"), filepath.Join(root, "containers")
	rt := newFakeRuntime(newFakeClock())
	id := strings.Repeat("c", 64)
	rt.addLabelled(id, map[string]string{LabelContainer: "c", LabelPodName: "p", LabelPodNamespace: "default", LabelPodUID: "u", LabelRestartCount: "0"}, ContainerState{Exists: true})
	logFile := filepath.Join(logDir, "default_p_u", "c", "0.log")
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logFile, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	s := &Supervisor{opts: Options{LogLinks: links}, workerDeps: workerDeps{logLinks: links, layout: layout.Layout{LogDir: logDir}, rt: rt}}
	if err := s.pruneLogLinks(context.Background()); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(links, LogLinkName("p", "default", "c", id))
	before, dirBefore := statID(t, link), statID(t, links)
	for range 10 {
		if err := s.pruneLogLinks(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if after := statID(t, link); after != before {
		t.Errorf("link remade at rest: %+v → %+v", before, after)
	}
	if after := statID(t, links); after != dirBefore {
		t.Errorf("links directory changed at rest: %+v → %+v", dirBefore, after)
	}
}

// A pod's start writes its record four times: with the sandbox and the ID
// of the container about to be created, with the network attached, once
// the container runs, and at the step's end (started, ready). The sandbox
// alone is not written: a podvisor that dies before the next write
// removes a sandbox no record names, and its CNI attachment.
func TestRecordWritesOfAStart(t *testing.T) {
	e := newEnv(t)
	p := testPod("writes", v1.RestartPolicyAlways, nil, "a")
	dir := e.s.layout.PodDir(string(p.UID))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// With IN_CREATE (of each write's temporary file) between them, the
	// kernel cannot merge the renames' identical events into one.
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	w := e.worker(p)
	e.step(w)
	if e.rt.running()["a"] == "" {
		t.Fatal("container a not running after one step")
	}
	writes := 0
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		inotify.Each(buf, n, func(_ int, mask uint32, name string) {
			if mask&unix.IN_MOVED_TO != 0 && name == filepath.Base(e.s.layout.RecordFile(string(p.UID))) {
				writes++
			}
		})
	}
	if writes != 4 {
		t.Errorf("the start wrote the pod record %d times, want 4", writes)
	}
	rec, errs := loadRecords(e.s.layout)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r := rec[p.UID]
	if r == nil || r.Sandbox == nil || !r.Sandbox.Network || r.container(ctrRef{Type: containerTypeApp, Name: "a"}).ID == "" {
		t.Errorf("record after the start = %+v, want the sandbox, its network and container a", r)
	}
}
