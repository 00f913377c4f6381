package status

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJournalSurvivesRestart: events recorded by one Store are there for
// the next one opened on the same journal, counts included.
func TestJournalSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-n", Namespace: "default", UID: "u"}}
	a := NewStore(nil)
	if err := a.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	a.Eventf(pod, "", v1.EventTypeNormal, "Started", "Started container c")
	a.Eventf(pod, "", v1.EventTypeNormal, "Started", "Started container c")
	a.NodeEventf("n", v1.EventTypeWarning, "InvalidManifest", "x.yaml:1: bad")
	a.CloseJournal()

	b := NewStore(nil)
	if err := b.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	evs := b.Events()
	if len(evs) != 2 || evs[0].Reason != "Started" || evs[0].Count != 2 || evs[1].InvolvedObject.Kind != "Node" {
		t.Fatalf("events after reopening: %+v", evs)
	}
	// New events keep unique names after a restart.
	b.Eventf(pod, "", v1.EventTypeNormal, "Killing", "Stopping container c")
	if evs := b.Events(); evs[2].Name == evs[0].Name || evs[2].Name == evs[1].Name {
		t.Fatalf("reused event name %s", evs[2].Name)
	}
}

// TestJournalCompacts: the file is rewritten once it holds twice MaxEvents
// lines, and a torn last line is ignored.
func TestJournalCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s := NewStore(nil)
	if err := s.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}
	for i := 0; i < 2*MaxEvents+10; i++ {
		s.Eventf(pod, "", v1.EventTypeNormal, "Tick", "tick %d", i)
	}
	s.CloseJournal()
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n > 2*MaxEvents {
		t.Fatalf("journal has %d lines, not compacted", n)
	}
	os.WriteFile(path, append(b, []byte(`{"metadata":{"name":"torn`)...), 0o600)
	r := NewStore(nil)
	if err := r.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	evs := r.Events()
	if len(evs) != MaxEvents || evs[len(evs)-1].Message != "tick 2009" {
		t.Fatalf("%d events, last %q", len(evs), evs[len(evs)-1].Message)
	}
}
