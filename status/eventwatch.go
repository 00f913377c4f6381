package status

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// EventChange is one new or updated event, as an event watcher sees it.
type EventChange struct {
	// Type is watch.Added for a new event, watch.Modified for one whose
	// count, last time or message changed.
	Type watch.EventType
	// Event is the watcher's own copy; its ResourceVersion is Version.
	Event *v1.Event
	// Version is the Store's event version at the change.
	Version uint64
}

// eventFeed versions a Store's events and hands their changes to watchers.
// It lives under the Store's lock; its zero value is ready.
type eventFeed struct {
	version  uint64                  // event changes so far
	vers     map[string]eventVersion // by event name
	watchers map[*eventWatcher]struct{}
}

// current is the feed's version: at least 1, the version of the events
// recorded before any change was counted (those loaded from the journal),
// so a list taken then and a watch from its version never see them twice.
func (f *eventFeed) current() uint64 { return max(f.version, 1) }

// eventVersion is when an event was added and last changed.
type eventVersion struct{ added, changed uint64 }

// eventChangedLocked versions e (just recorded or updated) and gives it to
// every watcher without waiting for any.
func (s *Store) eventChangedLocked(e *v1.Event) {
	f := &s.evfeed
	if f.vers == nil {
		f.vers = make(map[string]eventVersion)
	}
	f.version = f.current() + 1
	v, ok := f.vers[e.Name]
	typ := watch.Modified
	if !ok {
		v.added, typ = f.version, watch.Added
	}
	v.changed = f.version
	f.vers[e.Name] = v
	if len(f.vers) > 2*MaxEvents {
		// Forget the versions of events trimmed from the ring.
		keep := make(map[string]eventVersion, len(s.events))
		for i := range s.events {
			if v, ok := f.vers[s.events[i].Name]; ok {
				keep[s.events[i].Name] = v
			}
		}
		f.vers = keep
	}
	if len(f.watchers) == 0 {
		return
	}
	c := EventChange{Type: typ, Event: e.DeepCopy(), Version: f.version}
	for w := range f.watchers {
		w.add(c)
	}
}

// EventList returns copies of the recorded events, oldest first as Events
// returns them, each with its ResourceVersion, and the event version they
// are at: WatchEvents(ctx, version) then delivers every later change.
func (s *Store) EventList() ([]v1.Event, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]v1.Event, len(s.events))
	for i := range s.events {
		s.events[i].DeepCopyInto(&out[i])
		out[i].ResourceVersion = strconv.FormatUint(s.evfeed.vers[out[i].Name].changed, 10)
	}
	return out, s.evfeed.current()
}

// WatchEvents returns a channel that delivers the events recorded or
// updated after event version since, in version order, until ctx is done;
// then the channel is closed. since 0 delivers every kept event ADDED
// first. ErrExpired: since is newer than the Store (a version of an
// earlier podvisor).
//
// A watcher never holds the Store up, and what it holds unread is bounded:
// changes to one event it has not read yet become one (ADDED stays ADDED),
// and beyond MaxEvents unread events the oldest are dropped, as the ring
// drops them.
func (s *Store) WatchEvents(ctx context.Context, since uint64) (<-chan EventChange, error) {
	s.mu.Lock()
	f := &s.evfeed
	if since > f.current() {
		v := f.current()
		s.mu.Unlock()
		return nil, fmt.Errorf("watch events from version %d: the store is at %d: %w", since, v, ErrExpired)
	}
	w := &eventWatcher{pending: make(map[string]EventChange), wake: make(chan struct{}, 1)}
	for i := range s.events {
		e := &s.events[i]
		v := f.vers[e.Name]
		if v.changed <= since && since > 0 {
			continue
		}
		typ := watch.Modified
		if v.added > since || since == 0 {
			typ = watch.Added
		}
		w.pending[e.Name] = EventChange{Type: typ, Event: e.DeepCopy(), Version: v.changed}
	}
	if f.watchers == nil {
		f.watchers = make(map[*eventWatcher]struct{})
	}
	f.watchers[w] = struct{}{}
	s.mu.Unlock()

	out := make(chan EventChange)
	go func() {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.evfeed.watchers, w)
			s.mu.Unlock()
		}()
		for ctx.Err() == nil {
			c, ok := w.next()
			if !ok {
				select {
				case <-w.wake:
				case <-ctx.Done():
				}
				continue
			}
			select {
			case out <- c:
			case <-ctx.Done():
			}
		}
	}()
	return out, nil
}

// eventWatcher is one WatchEvents: the changes its reader has not read
// yet, one per event name, and a buffer-1 signal that there are some.
type eventWatcher struct {
	mu      sync.Mutex
	pending map[string]EventChange
	wake    chan struct{}
}

func (w *eventWatcher) add(c EventChange) {
	w.mu.Lock()
	if prev, ok := w.pending[c.Event.Name]; ok && prev.Type == watch.Added {
		c.Type = watch.Added // the reader has not seen it yet
	}
	w.pending[c.Event.Name] = c
	if len(w.pending) > MaxEvents {
		oldest := c
		for _, p := range w.pending {
			if p.Version < oldest.Version {
				oldest = p
			}
		}
		delete(w.pending, oldest.Event.Name)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the unread change with the lowest version and returns the
// reader's own copy, its ResourceVersion set.
func (w *eventWatcher) next() (EventChange, bool) {
	w.mu.Lock()
	var first EventChange
	for _, c := range w.pending {
		if first.Event == nil || c.Version < first.Version {
			first = c
		}
	}
	if first.Event != nil {
		delete(w.pending, first.Event.Name)
	}
	w.mu.Unlock()
	if first.Event == nil {
		return EventChange{}, false
	}
	first.Event = first.Event.DeepCopy()
	first.Event.ResourceVersion = strconv.FormatUint(first.Version, 10)
	return first, true
}
