package supervise

import (
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time                  { return c.t }
func (c *fakeClock) Step(d time.Duration)            { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock                       { return &fakeClock{t: time.Unix(1_000_000, 0)} }
func (c *fakeClock) After(d time.Duration) time.Time { return c.t.Add(d) }

// TestBackoffSequence follows kubelet's documented CrashLoopBackOff: the
// first restart is immediate, then 10s doubling to a 300s cap.
func TestBackoffSequence(t *testing.T) {
	clk := newFakeClock()
	b := newBackoff(clk.Now)
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, w := range want {
		exit := clk.Now()
		if got := b.remaining("c", exit); got != w {
			t.Fatalf("restart %d: wait %v, want %v", i, got, w)
		}
		clk.Step(w)
		if got := b.remaining("c", exit); got != 0 {
			t.Fatalf("restart %d: still %v to wait after the delay", i, got)
		}
		b.next("c", exit)
		clk.Step(time.Second) // runs one second, then crashes again
	}
}

// TestBackoffResetsAfterLongRun: a container that ran for more than ten
// minutes restarts immediately again.
func TestBackoffResetsAfterLongRun(t *testing.T) {
	clk := newFakeClock()
	b := newBackoff(clk.Now)
	b.next("c", clk.Now())
	clk.Step(time.Second)
	if got := b.remaining("c", clk.Now()); got != 10*time.Second {
		t.Fatalf("wait = %v, want 10s", got)
	}
	clk.Step(11 * time.Minute)
	if got := b.remaining("c", clk.Now()); got != 0 {
		t.Fatalf("after 11m running wait = %v, want 0", got)
	}
	b.next("c", clk.Now())
	clk.Step(time.Second)
	if got := b.remaining("c", clk.Now()); got != 10*time.Second {
		t.Fatalf("after reset wait = %v, want 10s", got)
	}
}

func TestBackoffKeysIndependent(t *testing.T) {
	clk := newFakeClock()
	b := newBackoff(clk.Now)
	b.next("a", clk.Now())
	if got := b.remaining("b", clk.Now()); got != 0 {
		t.Fatalf("b waits %v because of a", got)
	}
	b.forget("a")
	if got := b.remaining("a", clk.Now()); got != 0 {
		t.Fatalf("a waits %v after forget", got)
	}
}
