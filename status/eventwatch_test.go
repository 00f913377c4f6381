package status

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func recvEvent(t *testing.T, ch <-chan EventChange) EventChange {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no event change within 5s")
	}
	panic("unreachable")
}

func noEvent(t *testing.T, ch <-chan EventChange) {
	t.Helper()
	select {
	case c := <-ch:
		t.Fatalf("unexpected change %s %s %q", c.Type, c.Event.Reason, c.Event.Message)
	default:
	}
}

// A list and a watch from its version see each event once: new ones
// ADDED, a repeat MODIFIED with its new count, in version order.
func TestWatchEventsFromList(t *testing.T) {
	s, clock := newTestStore(t)
	web := testPod("default", "web-node1")
	s.Eventf(web, "", v1.EventTypeNormal, "Scheduled", "first")
	list, version := s.EventList()
	if len(list) != 1 || list[0].ResourceVersion != fmt.Sprint(version) {
		t.Fatalf("list %+v at %d", list, version)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.WatchEvents(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	clock.step(time.Second)
	s.Eventf(web, "", v1.EventTypeWarning, "BackOff", "second")
	c := recvEvent(t, ch)
	if c.Type != watch.Added || c.Event.Message != "second" || c.Version != version+1 || c.Event.ResourceVersion != fmt.Sprint(version+1) {
		t.Errorf("first change %s %q at %d (rv %s)", c.Type, c.Event.Message, c.Version, c.Event.ResourceVersion)
	}
	s.Eventf(web, "", v1.EventTypeNormal, "Scheduled", "first")
	c = recvEvent(t, ch)
	if c.Type != watch.Modified || c.Event.Message != "first" || c.Event.Count != 2 || c.Version != version+2 {
		t.Errorf("repeat %s %q count %d at %d", c.Type, c.Event.Message, c.Event.Count, c.Version)
	}
	noEvent(t, ch)

	// Resuming from the first change replays only the second.
	ch2, err := s.WatchEvents(ctx, version+1)
	if err != nil {
		t.Fatal(err)
	}
	if c := recvEvent(t, ch2); c.Type != watch.Modified || c.Event.Message != "first" {
		t.Errorf("resumed %s %q", c.Type, c.Event.Message)
	}
	// From 0: every kept event, ADDED.
	ch3, err := s.WatchEvents(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if c := recvEvent(t, ch3); c.Type != watch.Added {
			t.Errorf("from 0: %s %q", c.Type, c.Event.Message)
		}
	}
	if _, err := s.WatchEvents(ctx, version+100); !errors.Is(err, ErrExpired) {
		t.Errorf("watch from the future: %v", err)
	}
}

// Events loaded from the journal are in the first list, and a watch from
// its version does not deliver them again.
func TestWatchEventsAfterJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, _ := newTestStore(t)
	if err := s.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	s.Eventf(testPod("default", "web-node1"), "", v1.EventTypeNormal, "Started", "old")
	s.CloseJournal()

	s2, _ := newTestStore(t)
	if err := s2.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	defer s2.CloseJournal()
	list, version := s2.EventList()
	if len(list) != 1 {
		t.Fatalf("list after the journal: %+v", list)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s2.WatchEvents(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	s2.Eventf(testPod("default", "web-node1"), "", v1.EventTypeNormal, "Killing", "new")
	if c := recvEvent(t, ch); c.Event.Message != "new" || c.Type != watch.Added {
		t.Errorf("first change %s %q, want the new event", c.Type, c.Event.Message)
	}
}

// A watcher that does not read holds at most one change per event, and at
// most MaxEvents; the Store never waits for it.
func TestWatchEventsSlowReaderBounded(t *testing.T) {
	s, _ := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := s.WatchEvents(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	web := testPod("default", "web-node1")
	for i := range 3 * MaxEvents {
		s.Eventf(web, fmt.Sprintf("spec.containers{c%d}", i%(2*MaxEvents)), v1.EventTypeNormal, "Pulled", "same")
	}
	s.mu.Lock()
	var held int
	for w := range s.evfeed.watchers {
		w.mu.Lock()
		held = len(w.pending)
		w.mu.Unlock()
	}
	s.mu.Unlock()
	if held > MaxEvents {
		t.Errorf("a reader that does not read holds %d changes, want at most %d", held, MaxEvents)
	}
	// Coalescing: ADDED then MODIFIED before a read is one ADDED, with
	// the later state.
	w := newMailbox[string](nil, EventChange.version, MaxEvents)
	e := v1.Event{}
	e.Name, e.Count = "x", 1
	w.put("x", EventChange{Type: watch.Added, Event: e.DeepCopy(), Version: 1}, foldEvent)
	e.Count = 2
	w.put("x", EventChange{Type: watch.Modified, Event: e.DeepCopy(), Version: 2}, foldEvent)
	c, ok := w.take()
	c = c.own()
	if !ok || c.Type != watch.Added || c.Event.Count != 2 || c.Event.ResourceVersion != "2" {
		t.Errorf("coalesced %+v, want ADDED count 2 at 2", c)
	}
	if _, ok := w.take(); ok {
		t.Error("two changes left for one event")
	}
}
