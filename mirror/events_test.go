package mirror

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podvisor/podvisor/status"
)

func (f *fixture) events() []v1.Event {
	l, err := f.cs.CoreV1().Events(metav1.NamespaceAll).List(f.t.Context(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return l.Items
}

func (f *fixture) podEvents(reason string) []v1.Event {
	var out []v1.Event
	for _, e := range f.events() {
		if e.InvolvedObject.Kind == "Pod" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// Events recorded while the apiserver refuses wait and are delivered when
// it answers, a recurring one counted on one Event, about the static pod.
func TestEventsBufferedWhileOffline(t *testing.T) {
	f := newFixture(t)
	down := f.fail("create", "events", true)
	f.run()
	eventually(t, "the node", func() bool { return f.node() != nil })
	pod := localPod("etcd", "3f1c0a", v1.PodRunning)
	for range 3 {
		f.m.Record(status.Event{Pod: pod, FieldPath: "spec.containers{c}", Type: v1.EventTypeWarning, Reason: "BackOff", Message: "Back-off restarting failed container c"})
	}
	f.m.Record(status.Event{Pod: pod, FieldPath: "spec.containers{c}", Type: v1.EventTypeNormal, Reason: "Started", Message: "Started container c"})
	f.stepUntil(time.Second, "a few refused sends", func() bool { return len(f.actions("create", "events", "")) >= 3 })
	if n := len(f.events()); n != 0 {
		t.Fatalf("%d events in a refusing apiserver", n)
	}
	down.on.Store(false)
	f.stepUntil(time.Second, "the events", func() bool { return len(f.podEvents("BackOff")) == 1 && len(f.podEvents("Started")) == 1 })
	e := f.podEvents("BackOff")[0]
	want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: "etcd-node1", UID: "3f1c0a", FieldPath: "spec.containers{c}"}
	if e.InvolvedObject != want {
		t.Errorf("involvedObject %+v, want the static pod %+v", e.InvolvedObject, want)
	}
	if e.Namespace != ns || e.Count != 3 || e.Type != v1.EventTypeWarning || e.Source.Component != "podvisor" || e.Source.Host != testNode {
		t.Errorf("event %+v", e)
	}
	if !e.FirstTimestamp.Time.Equal(epoch) {
		t.Errorf("firstTimestamp %v, want when it was recorded (%v)", e.FirstTimestamp, epoch)
	}

	// Once more: the same Event, counted.
	f.m.Record(status.Event{Pod: pod, FieldPath: "spec.containers{c}", Type: v1.EventTypeWarning, Reason: "BackOff", Message: "Back-off restarting failed container c"})
	eventually(t, "the count patched", func() bool { b := f.podEvents("BackOff"); return len(b) == 1 && b[0].Count == 4 })
	var node []string
	for _, e := range f.events() {
		if e.InvolvedObject.Kind == "Node" {
			node = append(node, e.Reason)
			if e.Namespace != "default" || e.InvolvedObject.UID != testNode {
				t.Errorf("node event %+v", e)
			}
		}
	}
	if len(node) != 1 || node[0] != "NodeReady" {
		t.Errorf("node events %v, want NodeReady", node)
	}
}

func TestEventQueueBounded(t *testing.T) {
	f := newFixture(t)
	q := f.m.events
	for i := range maxQueuedEvents + 5 {
		q.add(v1.ObjectReference{Kind: "Node", Name: testNode}, testNode, v1.EventTypeNormal, "R", fmt.Sprintf("m%d", i))
	}
	if n := q.takeDropped(); n != 5 {
		t.Errorf("%d dropped, want 5", n)
	}
	first, _ := q.take()
	if first.Message != "m5" {
		t.Errorf("oldest kept %q, want m5", first.Message)
	}
	q.putBack(first)
	q.add(v1.ObjectReference{Kind: "Node", Name: testNode}, testNode, v1.EventTypeNormal, "R", "m5")
	if again, _ := q.take(); again.Message != "m5" || again.Count != 2 {
		t.Errorf("put back and recurred: %q count %d", again.Message, again.Count)
	}
}

func TestHealthz(t *testing.T) {
	var err error
	h := HealthzHandler(func() error { return err })
	for _, tc := range []struct {
		path string
		err  error
		code int
		body string
	}{
		{"/healthz", nil, 200, "ok"},
		{"/healthz/ping", nil, 200, "ok"},
		{"/healthz", fmt.Errorf("containerd: connection refused"), 500, "[-]podvisor failed: containerd: connection refused\nhealthz check failed\n"},
		{"/healthz/ping", fmt.Errorf("down"), 200, "ok"},
	} {
		err = tc.err
		rec := httptestRecorder(h, tc.path)
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("GET %s with %v: %d %q, want %d %q", tc.path, tc.err, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
}
