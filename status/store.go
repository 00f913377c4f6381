package status

import (
	"cmp"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Store holds the current pods (with status) and recent events. Safe for
// concurrent use. Every pod and event goes in and comes out as a deep copy.
//
// The pods are versioned: the Store counts its changes (a pod added, changed
// or deleted), each stored pod's ResourceVersion is the count at its last
// change, and Watch delivers the changes after a given count.
type Store struct {
	log *slog.Logger
	now func() time.Time // replaced by tests

	mu        sync.RWMutex
	version   uint64 // pod changes so far
	pods      map[types.UID]*entry
	deleted   []tombstone // oldest first, at most maxTombstones
	expired   uint64      // the newest deletion forgotten: Watch cannot replay from before it
	watchers  map[*podWatcher]struct{}
	events    []v1.Event // oldest (by last occurrence) first, bounded by trim
	similar   aggregator // groups of similar events, for aggregation
	lastNano  int64      // last timestamp used in an event name, for uniqueness
	healthErr error
	evfeed    eventFeed // event versions and watchers (eventwatch.go)

	journal      io.WriteCloser // nil: events are not journaled
	journalPath  string
	journalLines int
	journalTorn  bool // the journal ends in a partial line: start the next one on a new line
}

// entry is a stored pod. pod is never modified once stored, so watchers
// may hold it until they copy it out.
type entry struct {
	pod     *v1.Pod
	added   uint64 // the version that added it
	changed uint64 // the version of its last change, its ResourceVersion
}

// NewStore returns an empty, healthy Store, at version 0, that logs events to
// log.
func NewStore(log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{
		log:      log,
		now:      time.Now,
		pods:     make(map[types.UID]*entry),
		watchers: make(map[*podWatcher]struct{}),
	}
}

// SetPod stores a deep copy of pod (metadata+spec+status) under its UID,
// replacing any pod stored under that UID. The stored copy gets the Pod
// TypeMeta (apiVersion v1, kind Pod) so it serialises as kubectl shows it.
//
// A pod semantically equal (apimachinery's equality.Semantic) to the one
// stored, ignoring ResourceVersion, changes nothing: no new version, nothing
// for watchers. Otherwise the Store's version goes up by one, the stored
// pod's ResourceVersion becomes that version, and watchers see the pod
// ADDED or MODIFIED. The caller's ResourceVersion is ignored.
func (s *Store) SetPod(pod *v1.Pod) {
	if pod == nil {
		return
	}
	c := pod.DeepCopy()
	c.APIVersion, c.Kind = "v1", "Pod"
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.pods[c.UID]
	typ, added := watch.Added, s.version+1
	if old != nil {
		c.ResourceVersion = old.pod.ResourceVersion
		if equality.Semantic.DeepEqual(old.pod, c) {
			return
		}
		typ, added = watch.Modified, old.added
	}
	s.version++
	c.ResourceVersion = strconv.FormatUint(s.version, 10)
	s.pods[c.UID] = &entry{pod: c, added: added, changed: s.version}
	s.notifyLocked(PodChange{Type: typ, Pod: c, Version: s.version})
}

// DeletePod forgets the pod stored under uid; watchers see it DELETED, with
// its last state. Deleting a pod that is not stored changes nothing. Its
// events stay until they age out of the ring.
func (s *Store) DeletePod(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.pods[uid]
	if old == nil {
		return
	}
	delete(s.pods, uid)
	s.version++
	s.rememberDeletedLocked(tombstone{pod: old.pod, added: old.added, deleted: s.version})
	s.notifyLocked(PodChange{Type: watch.Deleted, Pod: old.pod, Version: s.version})
}

// Pod returns a copy of the pod stored under uid.
func (s *Store) Pod(uid types.UID) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.pods[uid]
	if !ok {
		return nil, false
	}
	return e.pod.DeepCopy(), true
}

// Pods returns copies of all stored pods sorted by namespace/name.
func (s *Store) Pods() []v1.Pod {
	pods, _ := s.List()
	return pods
}

// List returns copies of all stored pods, sorted as Pods sorts them, and the
// version they are at: Watch(ctx, version) then delivers every later change
// and none that the list already holds.
func (s *Store) List() ([]v1.Pod, uint64) {
	s.mu.RLock()
	out := make([]v1.Pod, 0, len(s.pods))
	for _, e := range s.pods {
		out = append(out, *e.pod.DeepCopy())
	}
	version := s.version
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b v1.Pod) int {
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.UID, b.UID),
		)
	})
	return out, version
}

// Version returns how many times the stored pods have changed: 0 for a new
// Store, one more after each SetPod or DeletePod that changed something.
func (s *Store) Version() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version
}

// SetHealth records whether podvisor is healthy (for example, connected to
// containerd): nil means healthy, an error says why not. /healthz reports it.
func (s *Store) SetHealth(err error) {
	s.mu.Lock()
	s.healthErr = err
	s.mu.Unlock()
}

// Health returns the error last given to SetHealth, nil when healthy.
func (s *Store) Health() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.healthErr
}
