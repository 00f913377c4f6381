package mirror

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podvisor/podvisor/status"
)

const (
	// maxQueuedEvents bounds the events waiting for the apiserver; past it
	// the oldest are dropped, and counted.
	maxQueuedEvents = 1000
	// sentEventsSize is how many sent events are remembered, so that one
	// that happens again is counted on the same Event (client-go's
	// EventCorrelator keeps 4096).
	sentEventsSize = 4096
)

// eventKey is what makes two events the same one, counted together:
// client-go's EventCorrelator key.
type eventKey struct {
	kind, namespace, name string
	uid                   types.UID
	fieldPath             string
	typ, reason, message  string
}

func keyOf(e *v1.Event) eventKey {
	r := &e.InvolvedObject
	return eventKey{r.Kind, r.Namespace, r.Name, r.UID, r.FieldPath, e.Type, e.Reason, e.Message}
}

// Record queues e for the apiserver, as kubelet's recorder makes an event:
// about e.Pod with the static pod's UID (the pod podvisor runs, not its
// mirror) or about the Node (UID its name), from source podvisor. It never
// blocks: while the apiserver is away events wait, at most 1000, and one
// that happens again while it waits is counted on the waiting one.
func (m *Mirror) Record(e status.Event) {
	host := e.Node
	var ref v1.ObjectReference
	if e.Pod != nil {
		if host == "" {
			host = e.Pod.Spec.NodeName
		}
		ref = v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: e.Pod.Namespace, Name: e.Pod.Name, UID: e.Pod.UID, FieldPath: e.FieldPath}
	} else {
		if host == "" {
			host = m.opts.NodeName
		}
		ref = v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: host, UID: types.UID(host), FieldPath: e.FieldPath}
	}
	if host == "" {
		host = m.opts.NodeName
	}
	m.events.add(ref, host, e.Type, e.Reason, e.Message)
}

// recordNode records an event about this Node.
func (m *Mirror) recordNode(typ, reason, message string) {
	m.Record(status.Event{Node: m.opts.NodeName, Type: typ, Reason: reason, Message: message})
}

// eventQueue holds the events not sent yet, oldest first, one per key.
type eventQueue struct {
	clock clock.Clock
	max   int
	wake  chan struct{} // buffer 1: there are events

	mu      sync.Mutex
	pending *list.List // of *v1.Event
	index   map[eventKey]*list.Element
	dropped int
}

func newEventQueue(max int, c clock.Clock) *eventQueue {
	return &eventQueue{clock: c, max: max, wake: make(chan struct{}, 1), pending: list.New(), index: map[eventKey]*list.Element{}}
}

func (q *eventQueue) add(ref v1.ObjectReference, host, typ, reason, message string) {
	now := metav1.NewTime(q.clock.Now())
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	ev := &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Source:              v1.EventSource{Component: status.EventSourceComponent, Host: host},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                typ,
		ReportingController: status.EventReportingController,
		ReportingInstance:   host,
	}
	k := keyOf(ev)
	q.mu.Lock()
	if el, ok := q.index[k]; ok {
		old := el.Value.(*v1.Event)
		old.Count++
		old.LastTimestamp = now
	} else {
		q.index[k] = q.pending.PushBack(ev)
		if q.pending.Len() > q.max {
			oldest := q.pending.Front()
			delete(q.index, keyOf(oldest.Value.(*v1.Event)))
			q.pending.Remove(oldest)
			q.dropped++
		}
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the oldest event.
func (q *eventQueue) take() (*v1.Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	el := q.pending.Front()
	if el == nil {
		return nil, false
	}
	ev := el.Value.(*v1.Event)
	q.pending.Remove(el)
	delete(q.index, keyOf(ev))
	return ev, true
}

// putBack returns an event that could not be sent to the front, counting
// in any of its kind that came meanwhile.
func (q *eventQueue) putBack(ev *v1.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := keyOf(ev)
	if el, ok := q.index[k]; ok {
		newer := el.Value.(*v1.Event)
		ev.Count += newer.Count
		ev.LastTimestamp = newer.LastTimestamp
		q.pending.Remove(el)
	}
	q.index[k] = q.pending.PushFront(ev)
	if q.pending.Len() > q.max {
		oldest := q.pending.Front()
		delete(q.index, keyOf(oldest.Value.(*v1.Event)))
		q.pending.Remove(oldest)
		q.dropped++
	}
}

// takeDropped returns how many events were dropped since it was last
// called.
func (q *eventQueue) takeDropped() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.dropped
	q.dropped = 0
	return n
}

// sentEvent is an Event in the apiserver and its count there.
type sentEvent struct {
	key       eventKey
	namespace string
	name      string
	count     int32
}

// sentEvents remembers the latest sent events, least recently used out
// first.
type sentEvents struct {
	max   int
	order *list.List // of *sentEvent, most recent first
	index map[eventKey]*list.Element
}

func newSentEvents(max int) *sentEvents {
	return &sentEvents{max: max, order: list.New(), index: map[eventKey]*list.Element{}}
}

func (s *sentEvents) get(k eventKey) *sentEvent {
	el, ok := s.index[k]
	if !ok {
		return nil
	}
	s.order.MoveToFront(el)
	return el.Value.(*sentEvent)
}

func (s *sentEvents) add(e *sentEvent) {
	if el, ok := s.index[e.key]; ok {
		s.order.Remove(el)
	}
	s.index[e.key] = s.order.PushFront(e)
	if s.order.Len() > s.max {
		last := s.order.Back()
		delete(s.index, last.Value.(*sentEvent).key)
		s.order.Remove(last)
	}
}

func (s *sentEvents) remove(k eventKey) {
	if el, ok := s.index[k]; ok {
		s.order.Remove(el)
		delete(s.index, k)
	}
}

// eventLoop sends the queued events as they come, and after a failure
// again with back-off.
func (s *session) eventLoop(ctx context.Context) {
	b := s.m.retry(retryMax)
	var retry <-chan time.Time
	for {
		if retry == nil {
			if err := s.flushEvents(ctx); err != nil {
				d := b.Next()
				s.m.log.Warn("send events", "err", err, "retry", d.Round(time.Millisecond))
				retry = s.m.clock.After(d)
			} else {
				b.Reset()
			}
		}
		select {
		case <-s.m.events.wake:
		case <-retry:
			retry = nil
		case <-ctx.Done():
			return
		}
	}
}

// flushEvents sends every queued event, oldest first, until one fails for a
// reason that may pass (which stays queued); one the apiserver refuses is
// dropped.
func (s *session) flushEvents(ctx context.Context) error {
	q := s.m.events
	for ctx.Err() == nil {
		ev, ok := q.take()
		if !ok {
			break
		}
		err := s.sendEvent(ctx, ev)
		switch {
		case err == nil:
		case permanent(err):
			s.m.log.Debug("apiserver refused an event", "reason", ev.Reason, "object", ev.InvolvedObject.Name, "err", err)
		default:
			q.putBack(ev)
			return err
		}
	}
	if n := q.takeDropped(); n > 0 {
		s.m.log.Warn("events dropped while the apiserver was unreachable", "count", n)
	}
	return nil
}

// sendEvent creates ev, or, when the same event was sent before, adds its
// count to that one, as client-go's recorder patches a recurring event.
func (s *session) sendEvent(ctx context.Context, ev *v1.Event) error {
	events := s.c.CoreV1().Events(ev.Namespace)
	k := keyOf(ev)
	if prev := s.m.sent.get(k); prev != nil {
		count := prev.count + ev.Count
		patch, err := json.Marshal(map[string]any{"count": count, "lastTimestamp": ev.LastTimestamp, "message": ev.Message})
		if err != nil {
			return err
		}
		rctx, cancel := s.call(ctx)
		_, err = events.Patch(rctx, prev.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		cancel()
		if err == nil {
			prev.count = count
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("patch event: %w", err)
		}
		s.m.sent.remove(k) // expired in the apiserver: a new one
	}
	c := ev.DeepCopy()
	c.Name = s.m.eventName(c.InvolvedObject.Name)
	rctx, cancel := s.call(ctx)
	created, err := events.Create(rctx, c, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return fmt.Errorf("create event: %w", err)
	}
	s.m.sent.add(&sentEvent{key: k, namespace: created.Namespace, name: created.Name, count: c.Count})
	return nil
}

// eventName is client-go's "<object>.<hex unix nanos>", unique even when
// the clock does not move between two events.
func (m *Mirror) eventName(object string) string {
	n := m.clock.Now().UnixNano()
	if n <= m.lastEventNano {
		n = m.lastEventNano + 1
	}
	m.lastEventNano = n
	return fmt.Sprintf("%s.%x", object, n)
}
