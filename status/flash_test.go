package status

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJournalUnwrittenAtRest holds DESIGN's invariant 10 for the event
// journal: publishing a pod's status again and again (each relist does),
// reporting health, reading events, and reopening the journal at a
// restart write nothing; only an event does.
func TestJournalUnwrittenAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-n", Namespace: "default", UID: "u"}}
	pod.Status.Phase = v1.PodRunning
	s := NewStore(nil)
	if err := s.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	s.Eventf(pod, "", v1.EventTypeNormal, "Started", "Started container c")
	// Held by a second name, the journal's inode cannot be reused by a
	// rewrite.
	if err := os.Link(path, path+".held"); err != nil {
		t.Fatal(err)
	}
	id := func() [4]int64 {
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return [4]int64{int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()}
	}
	before := id()
	for range 100 {
		s.SetPod(pod.DeepCopy())
		s.SetHealth(nil)
		s.Events()
	}
	s.CloseJournal()
	r := NewStore(nil)
	if err := r.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	r.SetPod(pod.DeepCopy())
	if got := id(); got != before {
		t.Errorf("journal written at rest: %v → %v", before, got)
	}
	r.Eventf(pod, "", v1.EventTypeNormal, "Killing", "Stopping container c")
	if got := id(); got == before {
		t.Error("journal not written for an event")
	}
	r.CloseJournal()
}
