package status

import (
	"context"
	"sync"
)

// mailbox is what one watcher has not read yet: at most one change per
// object (key K), and a buffer-1 signal that there are some (kubelet's pod
// workers' shape). The Store puts under its own lock without waiting; the
// watch goroutine takes. Pod and event watches are both one.
type mailbox[K comparable, C any] struct {
	mu      sync.Mutex
	pending map[K]C
	wake    chan struct{}
	// version is a change's version; changes are taken lowest first.
	version func(C) uint64
	// limit, when > 0, bounds the unread changes: beyond it the oldest is
	// dropped.
	limit int
}

func newMailbox[K comparable, C any](pending map[K]C, version func(C) uint64, limit int) *mailbox[K, C] {
	if pending == nil {
		pending = make(map[K]C)
	}
	return &mailbox[K, C]{pending: pending, wake: make(chan struct{}, 1), version: version, limit: limit}
}

// put folds c into the unread change to object k: fold gets the unread one
// (ok false: none) and returns what to keep, or keep false when the two
// cancel out.
func (m *mailbox[K, C]) put(k K, c C, fold func(prev C, ok bool, c C) (_ C, keep bool)) {
	m.mu.Lock()
	prev, ok := m.pending[k]
	if c, keep := fold(prev, ok, c); keep {
		m.pending[k] = c
	} else {
		delete(m.pending, k)
	}
	if m.limit > 0 && len(m.pending) > m.limit {
		if k, ok := m.lowestLocked(); ok {
			delete(m.pending, k)
		}
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the unread change with the lowest version.
// Taking the lowest keeps versions increasing: all that is left, and all
// that comes later, is newer.
func (m *mailbox[K, C]) take() (C, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.lowestLocked()
	if !ok {
		var zero C
		return zero, false
	}
	c := m.pending[k]
	delete(m.pending, k)
	return c, true
}

func (m *mailbox[K, C]) lowestLocked() (K, bool) {
	var low K
	var lowV uint64
	found := false
	for k, c := range m.pending {
		if v := m.version(c); !found || v < lowV {
			low, lowV, found = k, v, true
		}
	}
	return low, found
}

// deliver sends what m receives to a new channel, in version order, each
// change passed through own (the reader's own copy) first, until ctx is
// done; then it calls done and closes the channel.
func (m *mailbox[K, C]) deliver(ctx context.Context, own func(C) C, done func()) <-chan C {
	out := make(chan C)
	go func() {
		defer close(out)
		defer done()
		for ctx.Err() == nil {
			c, ok := m.take()
			if !ok {
				select {
				case <-m.wake:
				case <-ctx.Done():
				}
				continue
			}
			select {
			case out <- own(c):
			case <-ctx.Done():
			}
		}
	}()
	return out
}
