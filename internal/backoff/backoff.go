package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is one exponential back-off. It is not safe for concurrent use:
// each belongs to one goroutine (a pod worker, a watcher loop).
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Factor     float64 // default 2
	Jitter     float64 // fraction of each wait added at random, 0..1
	ResetAfter time.Duration
	Now        func() time.Time
	Rand       func() float64 // in [0,1); default rand.Float64

	delay time.Duration // the current wait, jitter included; 0: none
	base  time.Duration // the current wait before jitter
	last  time.Time     // the last attempt
}

// Kubelet returns kubelet's container restart back-off: 10 s doubling to
// 300 s, reset after 600 s without a restart, no jitter (client-go
// flowcontrol.Backoff as kubelet configures it).
func Kubelet(now func() time.Time) *Backoff {
	return &Backoff{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 600 * time.Second, Now: now}
}

// Retry returns a back-off for retrying a failed operation: 1 s doubling
// to max, with 20 % jitter, reset after 2×max without a failure.
func Retry(now func() time.Time, max time.Duration) *Backoff {
	return &Backoff{Initial: time.Second, Max: max, Jitter: 0.2, ResetAfter: 2 * max, Now: now}
}

func (b *Backoff) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}

// Next records an attempt now and returns how long to wait before the
// next one.
func (b *Backoff) Next() time.Duration { return b.NextSince(b.now()) }

// NextSince records an attempt caused by something that happened at t (a
// container's exit): the reset rule is judged from t.
func (b *Backoff) NextSince(t time.Time) time.Duration {
	if b.base == 0 || b.expired(t) {
		b.base = b.Initial
	} else {
		f := b.Factor
		if f <= 1 {
			f = 2
		}
		b.base = time.Duration(float64(b.base) * f)
		if b.Max > 0 && b.base > b.Max {
			b.base = b.Max
		}
	}
	b.delay = b.base
	if b.Jitter > 0 {
		r := rand.Float64
		if b.Rand != nil {
			r = b.Rand
		}
		b.delay += time.Duration(b.Jitter * r() * float64(b.base))
	}
	b.last = b.now()
	return b.delay
}

// Delay returns the current wait (0 before the first attempt).
func (b *Backoff) Delay() time.Duration { return b.delay }

// Remaining returns how much of the current wait is left, counted from t
// (the failure or exit it follows); 0 when the wait is over, none was
// recorded, or it expired.
func (b *Backoff) Remaining(t time.Time) time.Duration {
	if b.delay == 0 || b.expired(t) {
		return 0
	}
	return max(b.delay-b.now().Sub(t), 0)
}

// Until returns when the current wait, counted from t, ends; the zero
// time when there is none.
func (b *Backoff) Until(t time.Time) time.Time {
	if d := b.Remaining(t); d > 0 {
		return b.now().Add(d)
	}
	return time.Time{}
}

// Reset forgets every attempt.
func (b *Backoff) Reset() { b.delay, b.base, b.last = 0, 0, time.Time{} }

func (b *Backoff) expired(t time.Time) bool {
	return b.ResetAfter > 0 && !b.last.IsZero() && t.Sub(b.last) > b.ResetAfter
}

// Wait sleeps for d or until ctx ends, and returns ctx.Err() in that case.
func Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Loop calls f until it returns nil or ctx ends, waiting b's next delay
// after each failure; onErr (may be nil) hears each failure with the wait
// that follows it. It returns ctx.Err() when ctx ended first.
func Loop(ctx context.Context, b *Backoff, f func(context.Context) error, onErr func(err error, wait time.Duration)) error {
	for {
		err := f(ctx)
		if err == nil {
			b.Reset()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := b.Next()
		if onErr != nil {
			onErr(err, d)
		}
		if err := Wait(ctx, d); err != nil {
			return err
		}
	}
}
