package status

import (
	"context"
	"fmt"
	"strconv"

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
		w.put(e.Name, c, foldEvent)
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
	w := newMailbox[string](nil, EventChange.version, MaxEvents)
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

	return w.deliver(ctx, EventChange.own, func() {
		s.mu.Lock()
		delete(s.evfeed.watchers, w)
		s.mu.Unlock()
	}), nil
}

// eventWatcher is one WatchEvents: the changes its reader has not read
// yet, one per event name, at most MaxEvents (the oldest dropped, as the
// ring drops them).
type eventWatcher = mailbox[string, EventChange]

func (c EventChange) version() uint64 { return c.Version }

// own returns the reader's own copy of c, its ResourceVersion set.
func (c EventChange) own() EventChange {
	c.Event = c.Event.DeepCopy()
	c.Event.ResourceVersion = strconv.FormatUint(c.Version, 10)
	return c
}

// foldEvent folds change c into the unread change prev to the same event:
// an event the reader has not seen yet stays ADDED.
func foldEvent(prev EventChange, ok bool, c EventChange) (EventChange, bool) {
	if ok && prev.Type == watch.Added {
		c.Type = watch.Added
	}
	return c, true
}
