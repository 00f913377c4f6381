package rollout

import (
	"context"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakePods chan status.PodChange

func (f fakePods) Watch(context.Context, uint64) (<-chan status.PodChange, error) { return f, nil }

type events struct {
	mu  sync.Mutex
	got []status.Event
}

func (e *events) Record(ev status.Event) { e.mu.Lock(); e.got = append(e.got, ev); e.mu.Unlock() }

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestControllerPersists: the revisions are written when they change and
// only then, a rollback reaches the supervisor's snapshots, and a new
// Controller on the same state dir keeps it.
func TestControllerPersists(t *testing.T) {
	dir := t.TempDir()
	clk := clocktesting.NewFakeClock(t0)
	pods := make(fakePods, 4)
	evs := &events{}
	start := func() (chan manifest.Snapshot, chan manifest.Snapshot, *Controller, context.CancelFunc) {
		in, out := make(chan manifest.Snapshot), make(chan manifest.Snapshot)
		c := New(Options{Defaults: Settings{Deadline: 10 * time.Second}, StateDir: dir, Clock: clk, Events: evs, Pods: pods})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx, in, out); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		return in, out, c, cancel
	}
	in, out, c, stop := start()
	a, b := mpod("a", nil), mpod("b", nil)
	in <- manifest.Snapshot{Pods: []*manifest.Pod{a}}
	if got := <-out; got.Pods[0] != a {
		t.Fatal("the file's pod was not passed on as it is")
	}
	pods <- status.PodChange{Pod: observed("a", true, "")}
	waitFor(t, func() bool { ro, _ := c.Rollout(key); return ro.Revisions[0].Outcome == status.RolloutComplete })
	ino := inode(t, StateFile(dir))
	pods <- status.PodChange{Pod: observed("a", true, "")}
	in <- manifest.Snapshot{Pods: []*manifest.Pod{a}}
	<-out
	if inode(t, StateFile(dir)) != ino {
		t.Fatal("an unchanged state was written again")
	}

	in <- manifest.Snapshot{Pods: []*manifest.Pod{b}}
	<-out
	waitFor(t, clk.HasWaiters)
	clk.Step(10 * time.Second)
	got := <-out
	if got.Pods[0].Hash != "a" || got.Pods[0].Pod.Annotations[status.RolloutAnnotation] == "" {
		t.Fatalf("after the deadline the supervisor gets %s", got.Pods[0].Hash)
	}
	stop()

	in, out, _, _ = start()
	in <- manifest.Snapshot{Pods: []*manifest.Pod{b}}
	if got := <-out; got.Pods[0].Hash != "a" {
		t.Fatalf("after a restart the supervisor gets %s, want the rolled back revision a", got.Pods[0].Hash)
	}
	evs.mu.Lock()
	defer evs.mu.Unlock()
	if n := len(evs.got); n != 2 || evs.got[1].Reason != "RolledBack" || evs.got[1].Pod.UID != "a" {
		t.Fatalf("events %+v", evs.got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
