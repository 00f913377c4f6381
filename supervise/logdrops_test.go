package supervise

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWatchDrops: a log driver's status file written (closed after
// writing) under a pod directory that appeared after the watch began tells
// that pod's worker to read its drops, through real inotify; output
// written to a log file does not, nor a status file written at start (the
// workers read theirs at their first step).
func TestWatchDrops(t *testing.T) {
	logDir := t.TempDir()
	ctrDir := func(uid, ctr string) string {
		return filepath.Join(logDir, "default_p-"+uid+"_"+uid, ctr)
	}
	// A pod there before the watch, its status file written by then.
	old := filepath.Join(ctrDir("old", "c"), "0.log")
	os.MkdirAll(filepath.Dir(old), 0o755)
	os.WriteFile(crilog.DropsPath(old), []byte(`{"lines":0}`), 0o640)
	workers := map[types.UID]*podWorker{}
	for _, uid := range []types.UID{"old", "new", "fence"} {
		workers[uid] = &podWorker{inbox: newInbox()}
	}
	s := &Supervisor{
		workerDeps: workerDeps{layout: layout.Layout{LogDir: logDir}, clock: newFakeClock(), log: slog.New(slog.DiscardHandler)},
		opts:       Options{RelistPeriod: time.Second},
		workers:    workers,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.watchDrops(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	told := func(uid types.UID) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range workers[uid].inbox.take() {
			if _, ok := m.(dropsMsg); ok {
				return true
			}
		}
		return false
	}
	// A new pod's new container: its driver writes the status. Written
	// again until heard, since the watch is set up beside the test.
	log := filepath.Join(ctrDir("new", "c"), "0.log")
	poll(t, "the new pod's worker told of its status file", func() bool {
		os.MkdirAll(filepath.Dir(log), 0o755)
		os.WriteFile(crilog.DropsPath(log), []byte(`{"lines":2,"gaps":1}`), 0o640)
		return told("new")
	})
	// Output flowing into the old pod's log, the file kept open as its
	// driver does, then a fence: another pod's status write. Events come
	// in order, so once the fence is heard the output was looked at.
	f, err := os.OpenFile(old, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 10 {
		f.WriteString("2026-01-01T00:00:00Z stdout F hello\n")
	}
	fence := filepath.Join(ctrDir("fence", "c"), "0.log")
	poll(t, "the fence heard", func() bool {
		os.MkdirAll(filepath.Dir(fence), 0o755)
		os.WriteFile(crilog.DropsPath(fence), nil, 0o640)
		return told("fence")
	})
	if told("old") {
		t.Error("a worker told to read its drops for log output, or for a status file written before the watch")
	}
}

// TestLogDroppedByInotify: a running supervisor posts LogDropped when a
// container's log driver writes drops into its status file, heard through
// inotify with no relist (the clock never moves): the first found as its
// directories are watched, the next episode as the file is written.
func TestLogDroppedByInotify(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.s.layout.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- snapshot(p)
	stop := e.run(snaps)
	defer stop()
	poll(t, "started", func() bool { return e.runningCount() == 1 })
	log := e.s.layout.ContainerLog(p.Namespace, p.Name, string(p.UID), "a", 0)
	// Written until heard: the watch on the new directories is set up
	// beside the test.
	poll(t, "a LogDropped event", func() bool {
		os.MkdirAll(filepath.Dir(log), 0o755)
		os.WriteFile(crilog.DropsPath(log), []byte(`{"lines":4,"bytes":40,"gaps":1,"reason":"write: no space left on device"}`), 0o640)
		return e.st.has("LogDropped")
	})
	// A second episode, into the file now watched.
	os.WriteFile(crilog.DropsPath(log), []byte(`{"lines":9,"bytes":90,"gaps":2,"reason":"write: no space left on device"}`), 0o640)
	poll(t, "a second LogDropped event", func() bool {
		e.st.mu.Lock()
		defer e.st.mu.Unlock()
		n := 0
		for _, ev := range e.st.events {
			if strings.HasPrefix(ev, "LogDropped:") {
				n++
			}
		}
		return n == 2
	})
}
