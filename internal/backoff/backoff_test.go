package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time       { return c.t }
func (c *clock) Step(d time.Duration) { c.t = c.t.Add(d) }

// TestKubeletSequence follows kubelet's documented CrashLoopBackOff: the
// first restart is immediate, then 10 s doubling to a 300 s cap.
func TestKubeletSequence(t *testing.T) {
	clk := &clock{t: time.Unix(1_000_000, 0)}
	b := Kubelet(clk.Now)
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, w := range want {
		exit := clk.Now()
		if got := b.Remaining(exit); got != w {
			t.Fatalf("restart %d: wait %v, want %v", i, got, w)
		}
		clk.Step(w)
		if got := b.Remaining(exit); got != 0 {
			t.Fatalf("restart %d: still %v to wait after the delay", i, got)
		}
		b.NextSince(exit)
		clk.Step(time.Second) // runs one second, then crashes again
	}
}

// TestKubeletResetsAfterLongRun: a container that ran for more than ten
// minutes restarts immediately again, and the next wait is 10 s again.
func TestKubeletResetsAfterLongRun(t *testing.T) {
	clk := &clock{t: time.Unix(1_000_000, 0)}
	b := Kubelet(clk.Now)
	b.Next()
	b.Next()
	clk.Step(time.Second)
	if got := b.Remaining(clk.Now()); got != 20*time.Second {
		t.Fatalf("wait = %v, want 20s", got)
	}
	clk.Step(11 * time.Minute)
	if got := b.Remaining(clk.Now()); got != 0 {
		t.Fatalf("after 11m running wait = %v, want 0", got)
	}
	if got := b.Next(); got != 10*time.Second {
		t.Fatalf("after reset next = %v, want 10s", got)
	}
	if u := b.Until(clk.Now()); !u.Equal(clk.Now().Add(10 * time.Second)) {
		t.Fatalf("Until = %v", u)
	}
	b.Reset()
	if b.Remaining(clk.Now()) != 0 || b.Delay() != 0 || !b.Until(clk.Now()).IsZero() {
		t.Fatal("Reset left a wait")
	}
}

func TestJitterStretchesWithinBound(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	r := 0.0
	b := &Backoff{Initial: time.Second, Max: 8 * time.Second, Jitter: 0.5, Now: clk.Now, Rand: func() float64 { return r }}
	if got := b.Next(); got != time.Second {
		t.Fatalf("no-jitter draw: %v", got)
	}
	r = 0.999
	got := b.Next()
	if got <= 2*time.Second || got >= 3*time.Second {
		t.Fatalf("jittered second wait %v, want in (2s, 3s)", got)
	}
	for range 5 {
		b.Next()
	}
	if got := b.Next(); got > 12*time.Second || got < 8*time.Second {
		t.Fatalf("capped wait with jitter %v, want in [8s, 12s]", got)
	}
}

func TestLoopRetriesUntilSuccessAndStopsWithContext(t *testing.T) {
	b := &Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
	n := 0
	var waits []time.Duration
	err := Loop(context.Background(), b, func(context.Context) error {
		n++
		if n < 4 {
			return errors.New("not yet")
		}
		return nil
	}, func(_ error, d time.Duration) { waits = append(waits, d) })
	if err != nil || n != 4 {
		t.Fatalf("Loop = %v after %d calls", err, n)
	}
	if len(waits) != 3 || waits[0] != time.Millisecond || waits[2] != 2*time.Millisecond {
		t.Fatalf("waits = %v", waits)
	}
	if b.Delay() != 0 {
		t.Fatal("success did not reset the back-off")
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err = Loop(ctx, &Backoff{Initial: time.Hour}, func(context.Context) error {
		calls++
		cancel()
		return errors.New("fails")
	}, nil)
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("Loop after cancel = %v, %d calls", err, calls)
	}
	if err := Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a done context = %v", err)
	}
}
