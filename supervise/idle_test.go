package supervise

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
)

// TestIdleMinute holds "at rest, do nothing" (DESIGN invariant 10 and
// issue 19): with pods running and nothing changing, a simulated minute
// on the injected clock costs the relist and nothing else. With a runtime
// that lists its tasks (containerd's), each relist is one listing: no State
// call, no worker woken, no worker step (no status published). Without
// one, each relist asks one State per container. Either way: no shim
// search (CollectShims and ReleaseShims walk /proc); no listing of the
// containers for the log links' prune; no log drops status file is read (inotify reports their writes); nothing under the state,
// run and log dirs is written; no event is recorded; and the relist's
// ticker is the only timer waiting on the clock.
func TestIdleMinute(t *testing.T) {
	t.Run("listing", func(t *testing.T) { testIdleMinute(t, true) })
	t.Run("no listing", func(t *testing.T) { testIdleMinute(t, false) })
}

func testIdleMinute(t *testing.T, listing bool) {
	e := newEnv(t)
	if listing {
		e = newListingEnv(t)
	}
	const relist = 10 * time.Second
	e.s.opts.RelistPeriod = relist
	// With log links on: they are pruned at start and after removals,
	// never at rest.
	links := filepath.Join(t.TempDir(), "containers")
	e.s.opts.LogLinks, e.s.logLinks = links, links
	relists := &relistLog{}
	e.s.log = slog.New(relists)
	var dropReads atomic.Int64
	e.s.readDrops = func(path string) (crilog.Drops, error) {
		dropReads.Add(1)
		return crilog.ReadDrops(path)
	}
	l := e.s.layout
	for _, d := range []string{l.StateDir, l.RunDir, l.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const pods, perPod = 5, 2
	var ps []*v1.Pod
	for i := range pods {
		ps = append(ps, testPod(fmt.Sprintf("p%d", i), v1.RestartPolicyAlways, nil, "a", "b"))
	}
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- snapshot(ps...)
	stop := e.run(snaps)
	defer stop()
	const ctrs = pods * perPod
	poll(t, "pods started", func() bool { return e.runningCount() == ctrs })
	// relistOnce moves the clock one relist period on and returns once
	// the relist is over, with how many workers it woke. Without the
	// listing, it returns once every worker has asked for its containers'
	// state: every step before that relist's is then over.
	relistOnce := func() int {
		t.Helper()
		n := relists.count()
		want := e.rt.count("State ") + ctrs
		e.clock.Step(relist)
		poll(t, "a relist", func() bool { return relists.count() > n })
		if !listing {
			poll(t, "a relist's State calls", func() bool { return e.rt.count("State ") >= want })
		}
		return relists.last()
	}
	if listing {
		// The first relist wakes the workers that started their
		// containers (they saw no pid yet); they look once, and are at
		// rest from then on.
		relistOnce()
		poll(t, "every worker at rest", func() bool { return e.atRest() == pods })
	}
	// Relists to settle (the steps after the starts may still save
	// records and publish), one more so the last one's steps are over.
	for range 3 {
		relistOnce()
	}
	e.rt.mu.Lock()
	base := len(e.rt.calls)
	e.rt.mu.Unlock()
	e.st.mu.Lock()
	events, published := len(e.st.events), len(e.st.published)
	e.st.mu.Unlock()
	reads := dropReads.Load()
	before := scanDirs(t, l.StateDir, l.RunDir, l.LogDir)

	const minute = time.Minute
	for range minute / relist {
		if n := relistOnce(); listing && n > 0 {
			t.Errorf("a relist at rest woke %d workers, want none", n)
		}
	}
	if !listing {
		// One more, so the minute's last steps are over; its own State
		// calls are not counted.
		relistOnce()
	}

	e.rt.mu.Lock()
	calls := slices.Clone(e.rt.calls[base:])
	e.rt.mu.Unlock()
	counts := map[string]int{}
	for _, c := range calls {
		counts[strings.Fields(c)[0]]++
	}
	if listing {
		if n := counts["TaskStates"]; n != int(minute/relist) {
			t.Errorf("%d listings over the idle minute, want %d (one per relist)", n, minute/relist)
		}
		delete(counts, "TaskStates")
		if len(counts) > 0 {
			t.Errorf("runtime calls at rest besides the relist's listing: %v", counts)
		}
		e.st.mu.Lock()
		if n := len(e.st.published) - published; n > 0 {
			t.Errorf("%d pod statuses published at rest: workers stepped", n)
		}
		e.st.mu.Unlock()
	} else {
		wantStates := int(minute/relist+1) * ctrs
		if counts["State"] > wantStates {
			t.Errorf("%d State calls over the idle minute and a relist, want at most %d (one per container per relist)", counts["State"], wantStates)
		}
		delete(counts, "State")
		if len(counts) > 0 {
			t.Errorf("runtime calls at rest besides the relist's State: %v", counts)
		}
	}
	if n := dropReads.Load() - reads; n > 0 {
		t.Errorf("%d log drops status files read at rest", n)
	}
	after := scanDirs(t, l.StateDir, l.RunDir, l.LogDir)
	var changed []string
	for _, p := range slices.Sorted(maps.Keys(before)) {
		if after[p] != before[p] {
			changed = append(changed, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			changed = append(changed, p+" (new)")
		}
	}
	if len(changed) > 0 {
		t.Errorf("files written at rest: %v", changed)
	}
	e.st.mu.Lock()
	if n := len(e.st.events) - events; n > 0 {
		t.Errorf("%d events at rest: %q", n, e.st.events[events:])
	}
	e.st.mu.Unlock()
	if n := e.clock.timers(); n != 1 {
		t.Errorf("%d timers wait on the clock at rest, want 1 (the relist's ticker)", n)
	}
}

// relistLog is a log handler that keeps how many workers each relist
// woke, from its Debug line.
type relistLog struct {
	mu    sync.Mutex
	woken []int64
}

func (h *relistLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *relistLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "relist" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "woken" {
			h.mu.Lock()
			h.woken = append(h.woken, a.Value.Int64())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *relistLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *relistLog) WithGroup(string) slog.Handler      { return h }

func (h *relistLog) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.woken)
}

// last is how many workers the last relist woke.
func (h *relistLog) last() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.woken) == 0 {
		return -1
	}
	return int(h.woken[len(h.woken)-1])
}

// atRest counts the workers whose last step left their pod at rest.
func (e *env) atRest() int {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	n := 0
	for _, w := range e.s.workers {
		if w.rest.Load() != nil {
			n++
		}
	}
	return n
}

// scanDirs returns, for every file and directory under dirs, its size,
// mode and modification time.
func scanDirs(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			out[p] = fmt.Sprintf("%d %v %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
