package rollout

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mpod(hash string, ann map[string]string) *manifest.Pod {
	return &manifest.Pod{Hash: hash, Path: "/m/web.yaml", Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "web-n", Namespace: "default", UID: types.UID(hash), Annotations: ann}}}
}

func observed(hash string, ready bool, waiting string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n", Namespace: "default", UID: types.UID(hash)}}
	st := v1.ConditionFalse
	if ready {
		st = v1.ConditionTrue
	}
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: st}}
	if waiting != "" {
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: waiting}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3}}}}
	}
	return p
}

const key = "default/web-n"

// running returns the hash the machine runs for key.
func running(m *Machine) string {
	if r, _ := m.Override(key); r != nil {
		return r.Hash
	}
	return m.pods[key].File
}

func TestRollbackAtDeadline(t *testing.T) {
	m := NewMachine(Settings{Deadline: 10 * time.Second, MinReady: 2 * time.Second})
	m.Sync([]*manifest.Pod{mpod("a", nil)}, t0)
	// Ready is kept in memory until the next change: nothing to write.
	for i := range 2 {
		if ch, _ := m.Observe(observed("a", true, ""), t0.Add(time.Duration(i)*time.Second)); ch {
			t.Fatal("a Ready pod at rest changed the persisted state")
		}
	}
	_, evs := m.Sync([]*manifest.Pod{mpod("b", nil)}, t0.Add(5*time.Second))
	if len(evs) != 1 || evs[0].Reason != "RolloutProgressing" {
		t.Fatalf("events %+v", evs)
	}
	if running(m) != "b" || !m.Next().Equal(t0.Add(15*time.Second)) {
		t.Fatalf("running %s, next %s", running(m), m.Next())
	}
	// Status of the old revision does not count.
	m.Observe(observed("a", true, ""), t0.Add(6*time.Second))
	m.Observe(observed("b", false, "CrashLoopBackOff"), t0.Add(7*time.Second))
	if ch, _ := m.Tick(t0.Add(14 * time.Second)); ch {
		t.Fatal("rolled back before the deadline")
	}
	ch, evs := m.Tick(t0.Add(15 * time.Second))
	if !ch || len(evs) != 1 || evs[0].Reason != "RolledBack" || !evs[0].Warning {
		t.Fatalf("changed %v, events %+v", ch, evs)
	}
	want := "revision 2 (b) rolled back to revision 1: not Ready within 10s: container app: crash loop, last exit code 3"
	if evs[0].Message != want {
		t.Errorf("message\n%s\nwant\n%s", evs[0].Message, want)
	}
	r, why := m.Override(key)
	if r == nil || r.Hash != "a" || why != want {
		t.Fatalf("override %+v %q", r, why)
	}
	ro, _ := m.Status(key)
	if ro.Phase != status.RolloutRolledBack || ro.Revision != 1 || ro.FileRevision != 2 || ro.Revisions[1].Outcome != status.RolloutRolledBack || ro.Revisions[1].Status == nil {
		t.Errorf("status %+v", ro)
	}
	// The same file again keeps the rollback; a new content ends it.
	if ch, _ := m.Sync([]*manifest.Pod{mpod("b", nil)}, t0.Add(20*time.Second)); ch || running(m) != "a" {
		t.Fatal("the same file ended the rollback")
	}
	m.Sync([]*manifest.Pod{mpod("c", nil)}, t0.Add(30*time.Second))
	if running(m) != "c" || m.pods[key].Phase != status.RolloutProgressing {
		t.Fatalf("running %s, phase %s", running(m), m.pods[key].Phase)
	}
}

func TestCompleteAfterMinReady(t *testing.T) {
	m := NewMachine(Settings{})
	ann := map[string]string{ProgressDeadlineAnnotation: "10", MinReadyAnnotation: "3"}
	m.Sync([]*manifest.Pod{mpod("a", ann)}, t0)
	m.Observe(observed("a", true, ""), t0)
	m.Sync([]*manifest.Pod{mpod("b", ann)}, t0.Add(time.Second))
	m.Observe(observed("b", true, ""), t0.Add(2*time.Second))
	m.Observe(observed("b", false, ""), t0.Add(3*time.Second)) // not Ready again: min-ready starts over
	m.Observe(observed("b", true, ""), t0.Add(4*time.Second))
	if ch, _ := m.Tick(t0.Add(6 * time.Second)); ch {
		t.Fatal("complete before min-ready")
	}
	if !m.Next().Equal(t0.Add(7 * time.Second)) {
		t.Fatalf("next %s", m.Next())
	}
	ch, evs := m.Tick(t0.Add(7 * time.Second))
	if !ch || len(evs) != 1 || evs[0].Reason != "RolloutComplete" {
		t.Fatalf("changed %v events %+v", ch, evs)
	}
	if running(m) != "b" || m.pods[key].Good != "b" || !m.Next().IsZero() {
		t.Fatal("not complete")
	}
}

func TestNotGated(t *testing.T) {
	// Off by default, and a pod that was never Ready is not held to it.
	m := NewMachine(Settings{})
	m.Sync([]*manifest.Pod{mpod("a", nil)}, t0)
	m.Observe(observed("a", true, ""), t0)
	if _, evs := m.Sync([]*manifest.Pod{mpod("b", nil)}, t0); len(evs) != 0 || !m.Next().IsZero() {
		t.Fatal("gated without a deadline")
	}
	m = NewMachine(Settings{Deadline: time.Second})
	m.Sync([]*manifest.Pod{mpod("a", nil)}, t0)
	if _, evs := m.Sync([]*manifest.Pod{mpod("b", nil)}, t0); len(evs) != 0 || !m.Next().IsZero() {
		t.Fatal("gated a pod never Ready")
	}
	// A bad annotation is a warning naming file and field.
	_, evs := m.Sync([]*manifest.Pod{mpod("c", map[string]string{MinReadyAnnotation: "soon"})}, t0)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "/m/web.yaml: metadata.annotations[podvisor.io/min-ready-seconds]") {
		t.Fatalf("events %+v", evs)
	}
}

func TestResumeAndUndo(t *testing.T) {
	m := NewMachine(Settings{Deadline: 5 * time.Second, MinReady: 2 * time.Second})
	m.Sync([]*manifest.Pod{mpod("a", nil)}, t0)
	m.Observe(observed("a", true, ""), t0)
	m.Sync([]*manifest.Pod{mpod("b", nil)}, t0)
	// podvisor was down past the deadline: min-ready more to prove Ready.
	m.Resume(t0.Add(time.Minute))
	if !m.Next().Equal(t0.Add(time.Minute + 2*time.Second)) {
		t.Fatalf("next %s", m.Next())
	}
	m.Observe(observed("b", true, ""), t0.Add(time.Minute))
	m.Tick(t0.Add(time.Minute + 2*time.Second))
	if running(m) != "b" || m.pods[key].Phase != status.RolloutComplete {
		t.Fatal("not complete after resume")
	}
	done, evs, err := m.Undo(key, 0)
	if err != nil || done.Message != "pod/web-n rolled back to revision 1" || done.Revision != 1 || len(evs) != 1 || running(m) != "a" {
		t.Fatalf("undo: %+v %v, running %s", done, err, running(m))
	}
	if _, _, err := m.Undo(key, 0); !errors.Is(err, ErrNoRevision) {
		t.Fatalf("undo before revision 1: %v", err)
	}
	if _, _, err := m.Undo(key, 7); !errors.Is(err, ErrNoRevision) || !strings.Contains(err.Error(), "kept: 1, 2") {
		t.Fatalf("undo to 7: %v", err)
	}
	if _, _, err := m.Undo(key, 2); err != nil || running(m) != "b" || m.pods[key].Phase != status.RolloutComplete {
		t.Fatalf("undo to 2: %v", err)
	}
	if _, _, err := m.Undo("default/nope", 0); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

func TestBoundedRevisions(t *testing.T) {
	m := NewMachine(Settings{})
	m.MaxRevisions = 3
	for _, h := range []string{"a", "b", "c", "d", "e"} {
		m.Sync([]*manifest.Pod{mpod(h, nil)}, t0)
	}
	ro, _ := m.Status(key)
	if len(ro.Revisions) != 3 || ro.Revisions[0].Revision != 3 || ro.Revision != 5 {
		t.Fatalf("%+v", ro.Revisions)
	}
	m.Sync(nil, t0)
	if _, err := m.Status(key); !errors.Is(err, ErrNotFound) {
		t.Fatal("a removed pod's revisions are kept")
	}
}
