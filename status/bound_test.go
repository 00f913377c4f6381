package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// about returns the events about the object named name, oldest first.
func about(evs []v1.Event, name string) []v1.Event {
	var out []v1.Event
	for _, e := range evs {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// summary is what a user sees of events in a list: reason, count, message.
func summary(evs []v1.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s x%d %s\n", e.Reason, e.Count, e.Message)
	}
	return b.String()
}

// TestEventsOneObjectCannotEvictAnother: a flood of events about one
// object (1,500 documents of a bad manifest file reported on the node, or
// a pod failing in 1,500 ways) leaves the events of another pod as they
// were.
func TestEventsOneObjectCannotEvictAnother(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flood     func(s *Store, i int)
		flooded   string // the object flooded
		wantCount int    // its events left
	}{{
		name: "1,500 invalid documents about the node",
		flood: func(s *Store, i int) {
			s.NodeEventf("node1", v1.EventTypeWarning, "InvalidManifest", "bad.yaml:%d: spec.containers: Required value", 3*i+1)
		},
		flooded:   "node1",
		wantCount: aggregateMaxEvents, // nine on their own and the aggregate
	}, {
		name: "1,500 different reasons about the node",
		flood: func(s *Store, i int) {
			s.NodeEventf("node1", v1.EventTypeWarning, fmt.Sprintf("Reason%d", i), "m")
		},
		flooded:   "node1",
		wantCount: MaxEventsPerObject,
	}, {
		name: "1,500 different reasons about another pod",
		flood: func(s *Store, i int) {
			s.Eventf(testPod("default", "noisy-node1"), "", v1.EventTypeWarning, fmt.Sprintf("Reason%d", i), "m")
		},
		flooded:   "noisy-node1",
		wantCount: MaxEventsPerObject,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := newTestStore(t)
			web := testPod("default", "web-node1")
			s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", "busybox")
			s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "Created", "Created container app")
			s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "Started", "Started container app")
			s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container app")
			s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container app")
			before := summary(about(s.Events(), "web-node1"))

			for i := range 1500 {
				clock.step(time.Millisecond)
				tc.flood(s, i)
			}

			evs := s.Events()
			if got := summary(about(evs, "web-node1")); got != before {
				t.Errorf("the pod's events after the flood:\n%s\nwant:\n%s", got, before)
			}
			if n := len(about(evs, tc.flooded)); n != tc.wantCount {
				t.Errorf("%d events about %s, want %d", n, tc.flooded, tc.wantCount)
			}
		})
	}
}

// TestEventsPerObjectBound: an object keeps its newest MaxEventsPerObject
// events; older ones go first.
func TestEventsPerObjectBound(t *testing.T) {
	s, clock := newTestStore(t)
	pod := testPod("default", "web-node1")
	const total = MaxEventsPerObject + 50
	for i := range total {
		clock.step(time.Millisecond)
		s.Eventf(pod, "", v1.EventTypeNormal, fmt.Sprintf("Reason%d", i), "m")
	}
	evs := s.Events()
	if len(evs) != MaxEventsPerObject {
		t.Fatalf("kept %d events, want %d", len(evs), MaxEventsPerObject)
	}
	if first, last := evs[0].Reason, evs[len(evs)-1].Reason; first != "Reason50" || last != fmt.Sprintf("Reason%d", total-1) {
		t.Errorf("kept %s .. %s, want Reason50 .. Reason%d", first, last, total-1)
	}
	// A repeat of the oldest kept event is bumped, not added, and so
	// survives the next new event.
	s.Eventf(pod, "", v1.EventTypeNormal, "Reason50", "m")
	s.Eventf(pod, "", v1.EventTypeNormal, "New", "m")
	evs = s.Events()
	if len(evs) != MaxEventsPerObject {
		t.Fatalf("kept %d events, want %d", len(evs), MaxEventsPerObject)
	}
	if evs[0].Reason != "Reason52" || evs[len(evs)-2].Reason != "Reason50" || evs[len(evs)-2].Count != 2 {
		t.Errorf("after a bump: first %s, second to last %s (count %d), want Reason52 and Reason50 (count 2)",
			evs[0].Reason, evs[len(evs)-2].Reason, evs[len(evs)-2].Count)
	}
}

// TestEventsGlobalCap: over MaxEvents, the objects with the most events
// lose their oldest ones; a quiet pod keeps its events.
func TestEventsGlobalCap(t *testing.T) {
	s, clock := newTestStore(t)
	quiet := testPod("default", "quiet-node1")
	s.Eventf(quiet, "", v1.EventTypeNormal, "Started", "Started container app")
	const pods, each = 12, 90 // 1,080 events, each pod under its own bound
	for i := range each {
		for p := range pods {
			clock.step(time.Millisecond)
			s.Eventf(testPod("default", fmt.Sprintf("busy%d-node1", p)), "", v1.EventTypeNormal, fmt.Sprintf("Reason%d", i), "m")
		}
	}
	evs := s.Events()
	if len(evs) != MaxEvents {
		t.Fatalf("kept %d events, want %d", len(evs), MaxEvents)
	}
	if q := about(evs, "quiet-node1"); len(q) != 1 || q[0].Reason != "Started" {
		t.Errorf("quiet pod's events: %+v", q)
	}
	// The busy pods share what is left evenly: 999 = 12 * 83 + 3.
	for p := range pods {
		b := about(evs, fmt.Sprintf("busy%d-node1", p))
		if len(b) != 83 && len(b) != 84 {
			t.Errorf("busy%d kept %d events, want 83 or 84", p, len(b))
			continue
		}
		if last := b[len(b)-1].Reason; last != fmt.Sprintf("Reason%d", each-1) {
			t.Errorf("busy%d's newest event %s, want Reason%d", p, last, each-1)
		}
	}
}

// TestTrim: the rule that decides which events go.
func TestTrim(t *testing.T) {
	// ev makes an event about object o ("a", "b", ...) with reason r.
	ev := func(o, r string) v1.Event {
		return v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: o + "." + r},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: o, UID: types.UID(o)},
			Reason:         r,
		}
	}
	events := func(specs string) []v1.Event {
		var out []v1.Event
		for _, f := range strings.Fields(specs) {
			o, r, _ := strings.Cut(f, ".")
			out = append(out, ev(o, r))
		}
		return out
	}
	names := func(evs []v1.Event) string {
		var out []string
		for _, e := range evs {
			out = append(out, e.Name)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name, in, want string
		perObject      int
		total          int
	}{
		{"within bounds", "a.1 b.1 a.2", "a.1 b.1 a.2", 3, 5},
		{"empty", "", "", 3, 5},
		{"per object, oldest first", "a.1 b.1 a.2 a.3 a.4 a.5", "b.1 a.3 a.4 a.5", 3, 5},
		{"total, from the object with the most", "b.1 a.1 a.2 a.3 c.1 c.2", "b.1 a.2 a.3 c.1 c.2", 3, 5},
		{"total, a tie goes to the object with the oldest event", "b.1 a.1 a.2 b.2 c.1", "a.1 a.2 b.2 c.1", 3, 4},
		{"total, again and again", "a.1 a.2 a.3 b.1 b.2 c.1", "a.3 b.2 c.1", 3, 3},
		{"both", "q.1 a.1 a.2 a.3 a.4 b.1 b.2 b.3", "q.1 a.3 a.4 b.2 b.3", 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := trim(events(tc.in), tc.perObject, tc.total)
			if names(got) != tc.want {
				t.Errorf("trim(%s, %d, %d) = %s, want %s", tc.in, tc.perObject, tc.total, names(got), tc.want)
			}
		})
	}
}
