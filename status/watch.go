package status

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// ErrExpired means Watch cannot replay the changes since the version asked
// for, as the apiserver answers 410 Gone: the version is older than the
// deletions the Store remembers, or newer than any it has had (a version
// from an earlier podvisor). List again and watch from the list's version.
var ErrExpired = errors.New("version expired")

// maxTombstones is how many deleted pods a Store remembers, so that a
// watcher resuming from an older version still sees them DELETED.
const maxTombstones = 256

// PodChange is one change of a stored pod, as a watcher sees it.
type PodChange struct {
	// Type is watch.Added, watch.Modified or watch.Deleted.
	Type watch.EventType
	// Pod is the pod after the change or, when it was deleted, its last
	// state. It is the watcher's own copy; its ResourceVersion is Version.
	Pod *v1.Pod
	// Version is the Store's version at the change.
	Version uint64
}

// tombstone is a deleted pod, kept for watchers that resume from before the
// deletion.
type tombstone struct {
	pod     *v1.Pod
	added   uint64
	deleted uint64
}

// Watch returns a channel that delivers the changes to the stored pods after
// version since, in version order, until ctx is done; then the channel is
// closed. since 0 delivers every stored pod ADDED, then the changes; a
// version from List or from a PodChange delivers exactly what came after it,
// so a watcher that stops can resume where it stopped. ErrExpired: the Store
// cannot replay from since.
//
// The caller owns the watch: it, and the goroutine that feeds the channel,
// end only when ctx is done, so a caller that stops reading cancels ctx.
//
// A watcher never holds the Store up: one that reads slowly, or not at all,
// gets the latest state of each pod it has not read yet, not every
// intermediate one (several changes to a pod become one, with the last
// change's version; a pod added and deleted before the watcher reads it is
// never seen). Coalescing keeps what a watcher holds bounded by the number
// of pods.
//
//	unread  + change   = unread
//	—         any        change
//	ADDED     MODIFIED   ADDED, the new state
//	ADDED     DELETED    —
//	MODIFIED  MODIFIED   MODIFIED, the new state
//	MODIFIED  DELETED    DELETED
//	DELETED   ADDED      MODIFIED (the watcher knew the UID; it is back)
func (s *Store) Watch(ctx context.Context, since uint64) (<-chan PodChange, error) {
	s.mu.Lock()
	switch {
	case since > s.version:
		v := s.version
		s.mu.Unlock()
		return nil, fmt.Errorf("watch from version %d: the store is at %d: %w", since, v, ErrExpired)
	case since > 0 && since < s.expired:
		expired := s.expired
		s.mu.Unlock()
		return nil, fmt.Errorf("watch from version %d: deletions up to version %d are forgotten: %w", since, expired, ErrExpired)
	}
	w := newMailbox(s.changesSinceLocked(since), PodChange.version, 0)
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	return w.deliver(ctx, PodChange.own, func() { s.unwatch(w) }), nil
}

// changesSinceLocked returns, by UID, what a watcher that has seen
// everything up to version since has not seen: the coalesced changes after
// it, the same a watcher started at since would hold unread now.
func (s *Store) changesSinceLocked(since uint64) map[types.UID]PodChange {
	changes := make(map[types.UID]PodChange)
	// Pods the watcher knew that were deleted since. One may be back (a
	// manifest put back gives the same UID): then the loop below makes it
	// MODIFIED.
	gone := make(map[types.UID]bool)
	for _, t := range s.deleted {
		if t.added <= since && since < t.deleted {
			gone[t.pod.UID] = true
			changes[t.pod.UID] = PodChange{Type: watch.Deleted, Pod: t.pod, Version: t.deleted}
		}
	}
	for uid, e := range s.pods {
		if e.changed <= since {
			continue
		}
		typ := watch.Added
		if e.added <= since || gone[uid] {
			typ = watch.Modified
		}
		changes[uid] = PodChange{Type: typ, Pod: e.pod, Version: e.changed}
	}
	return changes
}

// rememberDeletedLocked keeps t for watchers resuming from before it,
// forgetting the oldest deletion beyond maxTombstones.
func (s *Store) rememberDeletedLocked(t tombstone) {
	if len(s.deleted) >= maxTombstones {
		s.expired = s.deleted[0].deleted
		s.deleted = append(s.deleted[:0], s.deleted[1:]...)
	}
	s.deleted = append(s.deleted, t)
}

// notifyLocked gives c to every watcher without waiting for any.
func (s *Store) notifyLocked(c PodChange) {
	for w := range s.watchers {
		w.put(c.Pod.UID, c, coalesce)
	}
}

func (s *Store) unwatch(w *podWatcher) {
	s.mu.Lock()
	delete(s.watchers, w)
	s.mu.Unlock()
}

// podWatcher is one Watch: the changes its reader has not read yet, one
// per pod.
type podWatcher = mailbox[types.UID, PodChange]

func (c PodChange) version() uint64 { return c.Version }

// own returns the reader's own copy of c, its ResourceVersion set.
func (c PodChange) own() PodChange {
	c.Pod = c.Pod.DeepCopy()
	c.Pod.ResourceVersion = strconv.FormatUint(c.Version, 10)
	return c
}

// coalesce folds change next into prev, the change to the same pod a watcher
// has not read yet (hasPrev false: none), as the table on Watch says. keep
// false: the two cancel out, and the watcher has nothing to read about the
// pod.
func coalesce(prev PodChange, hasPrev bool, next PodChange) (c PodChange, keep bool) {
	if !hasPrev {
		return next, true
	}
	switch {
	case prev.Type == watch.Added && next.Type == watch.Deleted:
		return PodChange{}, false
	case prev.Type == watch.Added:
		next.Type = watch.Added
	case prev.Type == watch.Deleted && next.Type == watch.Added:
		next.Type = watch.Modified
	}
	return next, true
}
