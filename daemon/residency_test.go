package daemon

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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
// settleWait has passed without; then it returns.
func TestReleaseStartupMemory(t *testing.T) {
	for _, settles := range []bool{true, false} {
		clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
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
		done := make(chan struct{})
		go func() {
			defer close(done)
			releaseStartupMemory(context.Background(), clk, synced.Load, pods, release, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		// step advances the fake clock by d once the goroutine waits on
		// its ticker, and waits until calls reaches want or done.
		step := func(d time.Duration, want int) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for !clk.HasWaiters() {
				if time.Now().After(deadline) {
					t.Fatal("no ticker waited on")
				}
				time.Sleep(time.Millisecond)
			}
			clk.Step(d)
			for count() != want {
				if time.Now().After(deadline) {
					t.Fatalf("settles=%v: %d releases, want %d", settles, count(), want)
				}
				time.Sleep(time.Millisecond)
			}
		}
		for range 5 {
			step(settleWait, 0) // not synced: however long, nothing
		}
		synced.Store(true)
		step(settlePoll, 1)
		step(settlePoll, 1) // pods pending
		if settles {
			settled.Store(true)
			step(settlePoll, 2)
		} else {
			step(settleWait, 2)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("settles=%v: still running after the second release", settles)
		}
	}
}
