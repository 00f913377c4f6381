package status

import (
	"cmp"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Store holds the current pods (with status) and recent events. Safe for
// concurrent use. Every pod and event goes in and comes out as a deep copy.
type Store struct {
	log *slog.Logger
	now func() time.Time // replaced by tests

	mu        sync.RWMutex
	pods      map[types.UID]*v1.Pod
	events    []v1.Event // oldest (by last occurrence) first, at most MaxEvents
	lastNano  int64      // last timestamp used in an event name, for uniqueness
	healthErr error

	journal      *os.File // nil: events are not journaled
	journalPath  string
	journalLines int
}

// NewStore returns an empty, healthy Store that logs events to log.
func NewStore(log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{
		log:  log,
		now:  time.Now,
		pods: make(map[types.UID]*v1.Pod),
	}
}

// SetPod stores a deep copy of pod (metadata+spec+status) under its UID,
// replacing any pod stored under that UID. The stored copy gets the Pod
// TypeMeta (apiVersion v1, kind Pod) so it serialises as kubectl shows it.
func (s *Store) SetPod(pod *v1.Pod) {
	if pod == nil {
		return
	}
	c := pod.DeepCopy()
	c.APIVersion, c.Kind = "v1", "Pod"
	s.mu.Lock()
	s.pods[c.UID] = c
	s.mu.Unlock()
}

// DeletePod forgets the pod stored under uid. Its events stay until they age
// out of the ring.
func (s *Store) DeletePod(uid types.UID) {
	s.mu.Lock()
	delete(s.pods, uid)
	s.mu.Unlock()
}

// Pod returns a copy of the pod stored under uid.
func (s *Store) Pod(uid types.UID) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pods[uid]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Pods returns copies of all stored pods sorted by namespace/name.
func (s *Store) Pods() []v1.Pod {
	s.mu.RLock()
	out := make([]v1.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		out = append(out, *p.DeepCopy())
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b v1.Pod) int {
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.UID, b.UID),
		)
	})
	return out
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
