package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podvisor/podvisor/internal/residency"
)

func readyPod(phase v1.PodPhase, ready v1.ConditionStatus) v1.Pod {
	return v1.Pod{Status: v1.PodStatus{Phase: phase, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready}}}}
}

func TestPodsSettled(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []v1.Pod
		want bool
	}{
		{"none", nil, true},
		{"ready", []v1.Pod{readyPod(v1.PodRunning, v1.ConditionTrue)}, true},
		{"ended", []v1.Pod{readyPod(v1.PodSucceeded, v1.ConditionFalse), readyPod(v1.PodFailed, v1.ConditionFalse)}, true},
		{"running, not ready", []v1.Pod{readyPod(v1.PodRunning, v1.ConditionTrue), readyPod(v1.PodRunning, v1.ConditionFalse)}, false},
		{"pending", []v1.Pod{readyPod(v1.PodPending, v1.ConditionFalse)}, false},
		{"no condition yet", []v1.Pod{{Status: v1.PodStatus{Phase: v1.PodRunning}}}, false},
	} {
		if got := podsSettled(tc.pods); got != tc.want {
			t.Errorf("%s: podsSettled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReleaseStartupMemory: nothing is given back before the supervisor
// synced; once at sync; once more when the pods have settled, or when
// settleWait has passed without. Then, with no timer running, it waits
// for pods to be added, and gives back once more when they have
// settled (or settleWait has passed).
func TestReleaseStartupMemory(t *testing.T) {
	for _, settles := range []bool{true, false} {
		clk := &tickerCounter{FakeClock: clocktesting.NewFakeClock(time.Unix(1e9, 0))}
		var synced, settled atomic.Bool
		var mu sync.Mutex
		var calls int
		release := func() (residency.Report, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return residency.Report{}, nil
		}
		count := func() int { mu.Lock(); defer mu.Unlock(); return calls }
		pods := func() []v1.Pod {
			if settled.Load() {
				return []v1.Pod{readyPod(v1.PodRunning, v1.ConditionTrue)}
			}
			return []v1.Pod{readyPod(v1.PodPending, v1.ConditionFalse)}
		}
		addedCh := make(chan struct{}, 1)
		var watching atomic.Bool
		added := func(context.Context) <-chan struct{} { watching.Store(true); return addedCh }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			releaseStartupMemory(ctx, clk, synced.Load, pods, added, release, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		deadline := time.Now().Add(10 * time.Second)
		until := func(what string, cond func() bool) {
			t.Helper()
			for !cond() {
				if time.Now().After(deadline) {
					t.Fatalf("settles=%v: %s: not within 10s (%d releases)", settles, what, count())
				}
				time.Sleep(time.Millisecond)
			}
		}
		// step advances the fake clock by d once the goroutine waits on
		// its ticker, and waits until calls reaches want.
		step := func(d time.Duration, want int) {
			t.Helper()
			until("a ticker waited on", func() bool { return clk.live.Load() == 1 })
			clk.Step(d)
			until(fmt.Sprintf("%d releases", want), func() bool { return count() == want })
		}
		settle := func(want int) {
			t.Helper()
			step(settlePoll, want-1) // pods pending
			if settles {
				settled.Store(true)
				step(settlePoll, want)
			} else {
				step(settleWait, want)
			}
		}
		for range 5 {
			step(settleWait, 0) // not synced: however long, nothing
		}
		synced.Store(true)
		step(settlePoll, 1)
		settle(2)

		// At rest: watching for added pods, no timer.
		until("watching for added pods", watching.Load)
		if n := clk.live.Load(); n != 0 {
			t.Errorf("settles=%v: %d tickers run at rest", settles, n)
		}
		if count() != 2 {
			t.Errorf("settles=%v: %d releases at rest, want 2", settles, count())
		}
		settled.Store(false)
		addedCh <- struct{}{}
		settle(3)
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("settles=%v: still running after its context ended", settles)
		}
	}
}

// tickerCounter counts the tickers made and not stopped (the fake
// clock's tickers stay its waiters when stopped).
type tickerCounter struct {
	*clocktesting.FakeClock
	live atomic.Int32
}

func (c *tickerCounter) NewTicker(d time.Duration) clock.Ticker {
	c.live.Add(1)
	return &countedTicker{Ticker: c.FakeClock.NewTicker(d), live: &c.live}
}

type countedTicker struct {
	clock.Ticker
	live *atomic.Int32
}

func (t *countedTicker) Stop() {
	t.live.Add(-1)
	t.Ticker.Stop()
}
