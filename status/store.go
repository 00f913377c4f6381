package status

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// MaxEvents is how many events a Store keeps; older ones are dropped.
	MaxEvents = 1000

	// EventSourceComponent is the source component of recorded events, the
	// place where kubelet puts "kubelet".
	EventSourceComponent = "podvisor"
	// EventReportingController is the reporting controller of recorded events.
	EventReportingController = "podvisor.io/podvisor"
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

// Eventf records an event about pod (fieldPath may name a container,
// "spec.containers{name}" or "spec.initContainers{name}") the way kubelet's
// recorder does: eventType is v1.EventTypeNormal or v1.EventTypeWarning,
// reason is CamelCase, the message is format applied to args.
//
// An event identical to a recorded one (same object UID, fieldPath, type,
// reason and message) bumps that event's Count and LastTimestamp and becomes
// the most recent one, instead of adding a new event. The Store keeps the
// MaxEvents most recent events. Every call is also logged, at Info for Normal
// and Warn for other types, with pod and reason attributes.
//
// pod may be nil for an event that is about no single pod.
func (s *Store) Eventf(pod *v1.Pod, fieldPath, eventType, reason, format string, args ...any) {
	host := ""
	if pod != nil {
		host = pod.Spec.NodeName
	}
	s.record(objectReference(pod, fieldPath), host, eventType, reason, format, args...)
}

// NodeEventf records an event about the node itself, for what concerns no
// single pod (a manifest file that yields no pod, for example). As kubelet
// does, the node's UID is its name.
func (s *Store) NodeEventf(node, eventType, reason, format string, args ...any) {
	ref := v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: types.UID(node)}
	s.record(ref, node, eventType, reason, format, args...)
}

func (s *Store) record(ref v1.ObjectReference, host, eventType, reason, format string, args ...any) {
	message := format
	if len(args) > 0 {
		message = fmt.Sprintf(format, args...)
	}

	attrs := []any{strings.ToLower(ref.Kind), ref.Name, "reason", reason}
	if ref.Kind == "Pod" {
		attrs[1] = ref.Namespace + "/" + ref.Name
	}
	if ref.FieldPath != "" {
		attrs = append(attrs, "fieldPath", ref.FieldPath)
	}
	if eventType == v1.EventTypeNormal {
		s.log.Info(message, attrs...)
	} else {
		s.log.Warn(message, attrs...)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := metav1.NewTime(s.now())

	for i := len(s.events) - 1; i >= 0; i-- {
		e := &s.events[i]
		if e.InvolvedObject.UID == ref.UID && e.InvolvedObject.Namespace == ref.Namespace &&
			e.InvolvedObject.Name == ref.Name && e.InvolvedObject.FieldPath == ref.FieldPath &&
			e.Type == eventType && e.Reason == reason && e.Message == message {
			ev := *e
			ev.Count++
			ev.LastTimestamp = now
			// Move it to the end: Events stays ordered by last occurrence and
			// a recurring event is not the first to age out.
			s.events = append(slices.Delete(s.events, i, i+1), ev)
			s.journalLocked(&ev)
			return
		}
	}

	// Names follow client-go's recorder, "<object>.<hex unix nanos>", made
	// unique even when the clock does not move between two events.
	nano := now.UnixNano()
	if nano <= s.lastNano {
		nano = s.lastNano + 1
	}
	s.lastNano = nano
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	ev := v1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s.%x", ref.Name, nano),
			Namespace:         namespace,
			CreationTimestamp: now,
		},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Source:              v1.EventSource{Component: EventSourceComponent, Host: host},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventType,
		ReportingController: EventReportingController,
		ReportingInstance:   host,
	}
	if len(s.events) >= MaxEvents {
		s.events = slices.Delete(s.events, 0, len(s.events)-MaxEvents+1)
	}
	s.events = append(s.events, ev)
	s.journalLocked(&ev)
}

// objectReference builds the InvolvedObject of an event about pod, as
// client-go's reference.GetReference does for a v1.Pod.
func objectReference(pod *v1.Pod, fieldPath string) v1.ObjectReference {
	ref := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", FieldPath: fieldPath}
	if pod != nil {
		ref.Namespace = pod.Namespace
		ref.Name = pod.Name
		ref.UID = pod.UID
		ref.ResourceVersion = pod.ResourceVersion
	}
	return ref
}

// Events returns copies of the recorded events, oldest first (ordered by
// their last occurrence).
func (s *Store) Events() []v1.Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]v1.Event, len(s.events))
	for i := range s.events {
		s.events[i].DeepCopyInto(&out[i])
	}
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
