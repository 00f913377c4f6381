package supervise

import (
	"time"
)

// backoff is kubelet's container restart back-off (client-go flowcontrol
// Backoff as kubelet configures it): the first restart is immediate, then
// each further restart waits 10s, 20s, 40s ... up to 300s after the exit
// that caused it. An entry that has not been bumped for twice the maximum
// (10 minutes) expires, which resets the back-off once a container has run
// that long. Times are monotonic readings from now, never containerd's wall
// clock, so clock steps do not shorten or stretch a back-off.
type backoff struct {
	now     func() time.Time
	initial time.Duration
	max     time.Duration
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(now func() time.Time) *backoff {
	return &backoff{now: now, initial: 10 * time.Second, max: 300 * time.Second, entries: map[string]*backoffEntry{}}
}

// remaining reports how long a restart of key must still wait, given the
// (monotonic) time the container was seen to exit. Zero means restart now.
func (b *backoff) remaining(key string, exitedAt time.Time) time.Duration {
	e, ok := b.entries[key]
	if !ok || b.expired(e, exitedAt) {
		return 0
	}
	left := e.delay - b.now().Sub(exitedAt)
	if left < 0 {
		return 0
	}
	return left
}

// next records a restart of key after an exit at exitedAt and grows the
// delay for the one after it.
func (b *backoff) next(key string, exitedAt time.Time) {
	e, ok := b.entries[key]
	if !ok || b.expired(e, exitedAt) {
		b.entries[key] = &backoffEntry{delay: b.initial, lastUpdate: b.now()}
		return
	}
	e.delay = min(2*e.delay, b.max)
	e.lastUpdate = b.now()
}

func (b *backoff) expired(e *backoffEntry, exitedAt time.Time) bool {
	return exitedAt.Sub(e.lastUpdate) > 2*b.max
}

func (b *backoff) forget(key string) { delete(b.entries, key) }
