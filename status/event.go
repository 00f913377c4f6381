package status

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// MaxEvents is how many events a Store keeps in all. Over it, the
	// object with the most events loses its oldest one.
	MaxEvents = 1000
	// MaxEventsPerObject is how many events a Store keeps about one object
	// (a pod, or the node); its oldest ones are dropped first. So one object
	// never evicts the events of others.
	MaxEventsPerObject = 100

	// EventSourceComponent is the source component of recorded events, the
	// place where kubelet puts "kubelet".
	EventSourceComponent = "podvisor"
	// EventReportingController is the reporting controller of recorded events.
	EventReportingController = "podvisor.io/podvisor"
)

// Event is one thing that happened to a pod or to the node (a container
// started, exited, was killed, failed a probe; a manifest is invalid), told
// once by whoever saw it. Each Recorder makes of it what it keeps: the Store
// a v1.Event in its ring and journal, metrics a counter, the mirror an event
// in the apiserver.
type Event struct {
	// Pod is the pod the event is about; nil for an event about the node.
	Pod *v1.Pod
	// Node is the node the event happens on. For an event about a pod it
	// may be empty: the pod's spec.nodeName is used.
	Node string
	// FieldPath names the part of the pod the event is about,
	// "spec.containers{name}" or "spec.initContainers{name}"; empty for the
	// whole pod.
	FieldPath string
	// Type is v1.EventTypeNormal or v1.EventTypeWarning.
	Type string
	// Reason is short and CamelCase, as kubelet's are ("Started", "BackOff").
	Reason string
	// Message says what happened, for a person.
	Message string
}

// Recorder consumes events. Record must not block for long (it is called
// from pod workers), must not modify e.Pod and must not keep it after it
// returns.
type Recorder interface {
	Record(e Event)
}

// RecorderFunc makes a function a Recorder.
type RecorderFunc func(Event)

// Record calls f(e).
func (f RecorderFunc) Record(e Event) { f(e) }

// Recorders returns a Recorder that gives each event to every one of rs, in
// order. nil entries are skipped.
func Recorders(rs ...Recorder) Recorder {
	var m multiRecorder
	for _, r := range rs {
		if r != nil {
			m = append(m, r)
		}
	}
	if len(m) == 1 {
		return m[0]
	}
	return m
}

type multiRecorder []Recorder

func (m multiRecorder) Record(e Event) {
	for _, r := range m {
		r.Record(e)
	}
}

var _ Recorder = (*Store)(nil)

// Record keeps e as a v1.Event, the way kubelet's recorder makes one: about
// e.Pod (or, when it is nil, about the node e.Node, whose UID is its name,
// as kubelet does), from source podvisor on e.Node.
//
// An event identical to a recorded one (same object UID, fieldPath, type,
// reason and message) bumps that event's Count and LastTimestamp and becomes
// the most recent one, instead of adding a new event. Similar events (same
// object, type and reason, other messages) are aggregated as client-go's
// EventCorrelator does: from the tenth different message, each within ten
// minutes of the one before, they fold into one event whose Message is
// "(combined from similar events): " and the latest message, and whose
// Count and LastTimestamp grow. The Store keeps at most MaxEventsPerObject
// events per object and MaxEvents in all, and journals each change when a
// journal is open. Every event is also logged, at Info for Normal and Warn for other
// types, with pod (or node) and reason attributes.
func (s *Store) Record(e Event) {
	host := e.Node
	var ref v1.ObjectReference
	if e.Pod != nil {
		ref = objectReference(e.Pod, e.FieldPath)
		if host == "" {
			host = e.Pod.Spec.NodeName
		}
	} else {
		ref = v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: e.Node, UID: types.UID(e.Node), FieldPath: e.FieldPath}
	}
	s.record(ref, host, e.Type, e.Reason, e.Message)
}

// Eventf records an event about pod (fieldPath may name a container,
// "spec.containers{name}" or "spec.initContainers{name}"): eventType is
// v1.EventTypeNormal or v1.EventTypeWarning, reason is CamelCase, the
// message is format applied to args (format itself when there are none).
// It is Record with the Event spelled out; pod must not be nil (NodeEventf
// is for events about the node).
func (s *Store) Eventf(pod *v1.Pod, fieldPath, eventType, reason, format string, args ...any) {
	s.Record(Event{Pod: pod, FieldPath: fieldPath, Type: eventType, Reason: reason, Message: sprintf(format, args)})
}

// NodeEventf records an event about the node itself, for what concerns no
// single pod (a manifest file that yields no pod, for example), as Eventf
// does for a pod.
func (s *Store) NodeEventf(node, eventType, reason, format string, args ...any) {
	s.Record(Event{Node: node, Type: eventType, Reason: reason, Message: sprintf(format, args)})
}

// sprintf leaves a message without arguments alone, so a literal "%" in it
// survives.
func sprintf(format string, args []any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}

func (s *Store) record(ref v1.ObjectReference, host, eventType, reason, message string) {
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
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	ev := v1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{
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

	var i int
	if s.similar.fold(aggregateKeyOf(&ev), message, now.Time) {
		ev.Message = aggregatePrefix + message
		i = s.findAggregateLocked(&ev)
	} else {
		i = s.findLocked(&ev)
	}
	if i >= 0 {
		// As the apiserver keeps it after client-go's patch: the first
		// event, with the new count, last time and message.
		old := s.events[i]
		old.Count++
		old.LastTimestamp = now
		old.Message = ev.Message
		// Move it to the end: Events stays ordered by last occurrence and
		// a recurring event is not the first to age out.
		s.events = append(slices.Delete(s.events, i, i+1), old)
		s.journalLocked(&old)
		s.eventChangedLocked(&old)
		return
	}

	// Names follow client-go's recorder, "<object>.<hex unix nanos>", made
	// unique even when the clock does not move between two events.
	nano := now.UnixNano()
	if nano <= s.lastNano {
		nano = s.lastNano + 1
	}
	s.lastNano = nano
	ev.Name = fmt.Sprintf("%s.%x", ref.Name, nano)
	s.events = append(s.events, ev)
	if len(s.events) > MaxEvents || s.countLocked(objectKeyOf(&ev)) > MaxEventsPerObject {
		s.events = trim(s.events, MaxEventsPerObject, MaxEvents)
	}
	s.journalLocked(&ev)
	s.eventChangedLocked(&ev)
}

// countLocked returns how many events are about object k.
func (s *Store) countLocked(k objectKey) int {
	n := 0
	for i := range s.events {
		if objectKeyOf(&s.events[i]) == k {
			n++
		}
	}
	return n
}

// findLocked returns the index of the most recent event identical to e
// (same object, fieldPath, type, reason and message), or -1.
func (s *Store) findLocked(e *v1.Event) int {
	ref := &e.InvolvedObject
	for i := len(s.events) - 1; i >= 0; i-- {
		o := &s.events[i]
		if o.InvolvedObject.UID == ref.UID && o.InvolvedObject.Namespace == ref.Namespace &&
			o.InvolvedObject.Name == ref.Name && o.InvolvedObject.FieldPath == ref.FieldPath &&
			o.Type == e.Type && o.Reason == e.Reason && o.Message == e.Message {
			return i
		}
	}
	return -1
}

// findAggregateLocked returns the index of the aggregate event of e's
// similar events, or -1.
func (s *Store) findAggregateLocked(e *v1.Event) int {
	k := aggregateKeyOf(e)
	for i := len(s.events) - 1; i >= 0; i-- {
		o := &s.events[i]
		if isAggregate(o) && aggregateKeyOf(o) == k {
			return i
		}
	}
	return -1
}

// objectReference builds the InvolvedObject of an event about pod, as
// client-go's reference.GetReference does for a v1.Pod.
func objectReference(pod *v1.Pod, fieldPath string) v1.ObjectReference {
	return v1.ObjectReference{
		Kind:            "Pod",
		APIVersion:      "v1",
		Namespace:       pod.Namespace,
		Name:            pod.Name,
		UID:             pod.UID,
		ResourceVersion: pod.ResourceVersion,
		FieldPath:       fieldPath,
	}
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
