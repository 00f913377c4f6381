package shutdown

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// fakeStopper records the stops; a pod named "stuck" never stops by
// itself (StopPod returns only when its context ends).
type fakeStopper struct {
	mu      sync.Mutex
	started []string
	ended   map[string]time.Time
	graces  map[string]time.Duration
	names   map[types.UID]string
	// onStuck, when set, is called when the stuck pod's stop begins.
	onStuck func()
}

func (f *fakeStopper) StopPod(ctx context.Context, uid types.UID, grace time.Duration) error {
	f.mu.Lock()
	name := f.names[uid]
	f.started = append(f.started, name)
	f.graces[name] = grace
	f.mu.Unlock()
	if name == "stuck" {
		if f.onStuck != nil {
			f.onStuck()
		}
		<-ctx.Done()
	}
	f.mu.Lock()
	f.ended[name] = time.Now()
	f.mu.Unlock()
	return ctx.Err()
}

func (f *fakeStopper) ResumeShutdownStops() {}

// stopPods goes group by group, lowest priority first, and a group whose
// pod never stops ends at its period: the shutdown is bounded whatever a
// pod does.
func TestStopPodsOrderAndBound(t *testing.T) {
	pods := []Pod{
		{UID: "c", Name: "critical", Priority: SystemNodeCriticalPriority, Grace: time.Minute},
		{UID: "s", Name: "stuck", Priority: 0, Grace: time.Minute},
		{UID: "n", Name: "normal", Priority: 5, Grace: 10 * time.Millisecond},
	}
	f := &fakeStopper{ended: map[string]time.Time{}, graces: map[string]time.Duration{}, names: map[types.UID]string{}}
	for _, p := range pods {
		f.names[p.UID] = p.Name
	}
	periods, _ := FromTotal(400*time.Millisecond, 100*time.Millisecond)
	m := New(Options{Periods: periods, Pods: func() []Pod { return pods }, Stopper: f, Log: slog.New(slog.DiscardHandler)})
	start := time.Now()
	m.stopPods(t.Context(), 0)
	took := time.Since(start)
	if took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("stopping took %s, want the first group's 300ms period (its stuck pod) and the critical pod's stop", took)
	}
	if i := slices.Index(f.started, "critical"); i != 2 {
		t.Errorf("stops in the order %q, want the critical pod last", f.started)
	}
	if f.ended["stuck"].Before(start.Add(300 * time.Millisecond)) {
		t.Errorf("the stuck pod's stop ended %s after the start, before its group's period", f.ended["stuck"].Sub(start))
	}
	want := map[string]time.Duration{"normal": 10 * time.Millisecond, "stuck": 300 * time.Millisecond, "critical": 100 * time.Millisecond}
	for name, g := range want {
		if f.graces[name] != g {
			t.Errorf("%s: grace %s, want %s", name, f.graces[name], g)
		}
	}

	// A cancelled shutdown ends the stopping at once.
	f.started = nil
	ctx, cancel := context.WithCancel(t.Context())
	f.onStuck = cancel // the shutdown is cancelled during the first group
	start = time.Now()
	m.stopPods(ctx, 0)
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("a cancelled stopping took %s", took)
	}
	if slices.Contains(f.started, "critical") {
		t.Errorf("stops %q after the cancel, want none of the critical group", f.started)
	}
}
