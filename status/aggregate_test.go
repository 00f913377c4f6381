package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestEventAggregation: similar events (same object, type and reason) with
// different messages are told one by one up to nine, then folded into one
// aggregate event, as client-go's EventCorrelator folds them.
func TestEventAggregation(t *testing.T) {
	s, clock := newTestStore(t)
	web := testPod("default", "web-node1")
	db := testPod("default", "db-node1")
	failed := func(pod *v1.Pod, fieldPath, msg string) {
		clock.step(time.Second)
		s.Eventf(pod, fieldPath, v1.EventTypeWarning, "Failed", msg)
	}
	for i := 1; i <= 9; i++ {
		failed(web, "spec.containers{app}", fmt.Sprintf("m%d", i))
	}
	if n := len(s.Events()); n != 9 {
		t.Fatalf("%d events after nine different messages, want 9", n)
	}
	failed(web, "spec.containers{app}", "m10")
	firstFolded := clock.now()
	failed(web, "spec.containers{side}", "m11") // another container of the same pod: similar
	failed(web, "spec.containers{app}", "m1")   // a repeat: counted on its own event
	failed(db, "spec.containers{app}", "m12")   // another pod: not similar
	clock.step(time.Second)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "Killing", "m13") // another reason
	s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "Failed", "m14")   // another type
	clock.step(aggregateInterval - 3*time.Second)
	failed(web, "spec.containers{app}", "m15") // ten minutes after the last similar one (m1): still folded
	lastFolded := clock.now()

	got := summary(s.Events())
	want := "" +
		"Failed x1 m2\nFailed x1 m3\nFailed x1 m4\nFailed x1 m5\nFailed x1 m6\nFailed x1 m7\nFailed x1 m8\nFailed x1 m9\n" +
		"Failed x2 m1\n" +
		"Failed x1 m12\n" +
		"Killing x1 m13\n" +
		"Failed x1 m14\n" +
		"Failed x3 (combined from similar events): m15\n"
	if got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	evs := s.Events()
	agg := evs[len(evs)-1]
	if !agg.FirstTimestamp.Time.Equal(firstFolded) || !agg.LastTimestamp.Time.Equal(lastFolded) {
		t.Errorf("aggregate first %v last %v, want %v and %v", agg.FirstTimestamp, agg.LastTimestamp, firstFolded, lastFolded)
	}
	if agg.InvolvedObject.Name != "web-node1" || agg.InvolvedObject.FieldPath != "spec.containers{app}" || agg.Type != v1.EventTypeWarning {
		t.Errorf("aggregate is about %+v (%s), want the first folded event's object", agg.InvolvedObject, agg.Type)
	}
	if db := about(evs, "db-node1"); len(db) != 1 {
		t.Errorf("db's events: %s", summary(db))
	}

	// More than ten minutes after the last similar event, messages are told
	// on their own again, up to nine; the tenth goes to the aggregate.
	clock.step(aggregateInterval + time.Nanosecond)
	for i := 16; i <= 24; i++ {
		failed(web, "spec.containers{app}", fmt.Sprintf("m%d", i))
	}
	evs = s.Events()
	if n := strings.Count(summary(evs), "combined"); n != 1 || !strings.HasPrefix(summary(evs[len(evs)-9:]), "Failed x1 m16\n") {
		t.Fatalf("after a quiet interval:\n%s", summary(evs))
	}
	failed(web, "spec.containers{app}", "m25")
	evs = s.Events()
	if last := evs[len(evs)-1]; last.Count != 4 || last.Message != aggregatePrefix+"m25" || last.Name != agg.Name {
		t.Errorf("the tenth message after a quiet interval made %s x%d %q, want the aggregate %s x4 %q",
			last.Name, last.Count, last.Message, agg.Name, aggregatePrefix+"m25")
	}
}

// TestAggregatorForgets: the groups of similar events are bounded; expired
// groups go first, then the least recent.
func TestAggregatorForgets(t *testing.T) {
	var a aggregator
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	key := func(i int) aggregateKey { return aggregateKey{name: fmt.Sprint("pod", i), reason: "Failed"} }
	for i := range maxAggregateRecords {
		a.fold(key(i), "m", start.Add(time.Duration(i)*time.Millisecond))
	}
	a.fold(key(maxAggregateRecords), "m", start.Add(time.Minute))
	if len(a.groups) != maxAggregateRecords || a.groups[key(0)] != nil || a.groups[key(1)] == nil {
		t.Fatalf("%d groups, pod0 kept %v, pod1 kept %v; want %d, the least recent forgotten",
			len(a.groups), a.groups[key(0)] != nil, a.groups[key(1)] != nil, maxAggregateRecords)
	}
	a.fold(key(-1), "m", start.Add(time.Hour))
	if len(a.groups) != 1 {
		t.Errorf("%d groups an hour later, want 1: the expired ones forgotten", len(a.groups))
	}
}
