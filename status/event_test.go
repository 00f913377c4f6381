package status

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestEventfDedup(t *testing.T) {
	s, clock := newTestStore(t)
	web := testPod("default", "web-node1")
	db := testPod("default", "db-node1")
	start := clock.now()

	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	clock.step(10 * time.Second)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	clock.step(10 * time.Second)
	// Each differs from the first in one field: all are new events.
	s.Eventf(db, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{side}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "Failed", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "other", web.Name)
	clock.step(10 * time.Second)
	// The first one again: bumped, and now the most recent.
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)

	evs := s.Events()
	if len(evs) != 6 {
		t.Fatalf("got %d events, want 6: %+v", len(evs), evs)
	}
	last := evs[len(evs)-1]
	if last.Count != 3 {
		t.Errorf("Count = %d, want 3", last.Count)
	}
	if !last.FirstTimestamp.Time.Equal(start) || !last.LastTimestamp.Time.Equal(start.Add(30*time.Second)) {
		t.Errorf("timestamps first=%v last=%v, want %v and %v", last.FirstTimestamp, last.LastTimestamp, start, start.Add(30*time.Second))
	}
	if last.Message != "Back-off restarting failed container app in pod web-node1" {
		t.Errorf("Message = %q", last.Message)
	}
	want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web-node1", UID: web.UID, FieldPath: "spec.containers{app}"}
	if last.InvolvedObject != want {
		t.Errorf("InvolvedObject = %+v, want %+v", last.InvolvedObject, want)
	}
	if last.Source.Component != "podvisor" || last.Source.Host != "node1" || last.Namespace != "default" || last.Kind != "Event" {
		t.Errorf("event metadata = %+v / %+v", last.ObjectMeta, last.Source)
	}
	names := map[string]bool{}
	for i, e := range evs {
		if names[e.Name] {
			t.Errorf("two events named %s", e.Name)
		}
		names[e.Name] = true
		if i != len(evs)-1 && e.Count != 1 {
			t.Errorf("event %s/%s has Count %d, want 1", e.Reason, e.Message, e.Count)
		}
	}
}

func TestEventfLogs(t *testing.T) {
	var buf bytes.Buffer
	s := NewStore(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	pod := testPod("kube-system", "etcd-node1")
	s.Eventf(pod, "", v1.EventTypeNormal, "Started", "Started container %s", "etcd")
	s.Eventf(pod, "spec.containers{etcd}", v1.EventTypeWarning, "Unhealthy", "Liveness probe failed")

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "Started container etcd", "pod": "kube-system/etcd-node1", "reason": "Started"},
		{"level": "WARN", "msg": "Liveness probe failed", "pod": "kube-system/etcd-node1", "reason": "Unhealthy"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d log lines, want %d: %s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, lines[i][k], v)
			}
		}
	}
}

// TestRecord: an Event becomes the v1.Event kubelet's recorder would make,
// and Eventf and NodeEventf are Record spelled out.
func TestRecord(t *testing.T) {
	web := testPod("default", "web-node1")
	for _, tc := range []struct {
		name   string
		record func(s *Store)
		want   v1.Event // the fields compared below
	}{{
		name: "pod event",
		record: func(s *Store) {
			s.Record(Event{Pod: web, FieldPath: "spec.containers{app}", Type: v1.EventTypeNormal, Reason: "Started", Message: "Started container app"})
		},
		want: v1.Event{
			InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web-node1", UID: web.UID, FieldPath: "spec.containers{app}"},
			Type:           v1.EventTypeNormal, Reason: "Started", Message: "Started container app",
			Source: v1.EventSource{Component: "podvisor", Host: "node1"},
		},
	}, {
		name: "Eventf is Record",
		record: func(s *Store) {
			s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "Started", "Started container %s", "app")
		},
		want: v1.Event{
			InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web-node1", UID: web.UID, FieldPath: "spec.containers{app}"},
			Type:           v1.EventTypeNormal, Reason: "Started", Message: "Started container app",
			Source: v1.EventSource{Component: "podvisor", Host: "node1"},
		},
	}, {
		name: "Node overrides the pod's node",
		record: func(s *Store) {
			s.Record(Event{Pod: web, Node: "other", Type: v1.EventTypeWarning, Reason: "Failed", Message: "x"})
		},
		want: v1.Event{
			InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web-node1", UID: web.UID},
			Type:           v1.EventTypeWarning, Reason: "Failed", Message: "x",
			Source: v1.EventSource{Component: "podvisor", Host: "other"},
		},
	}, {
		name: "node event",
		record: func(s *Store) {
			s.Record(Event{Node: "node1", Type: v1.EventTypeWarning, Reason: "InvalidManifest", Message: "web.yaml:3: bad"})
		},
		want: v1.Event{
			InvolvedObject: v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node1", UID: "node1"},
			Type:           v1.EventTypeWarning, Reason: "InvalidManifest", Message: "web.yaml:3: bad",
			Source: v1.EventSource{Component: "podvisor", Host: "node1"},
		},
	}, {
		name: "NodeEventf is Record",
		record: func(s *Store) {
			s.NodeEventf("node1", v1.EventTypeWarning, "InvalidManifest", "%s:%d: bad", "web.yaml", 3)
		},
		want: v1.Event{
			InvolvedObject: v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node1", UID: "node1"},
			Type:           v1.EventTypeWarning, Reason: "InvalidManifest", Message: "web.yaml:3: bad",
			Source: v1.EventSource{Component: "podvisor", Host: "node1"},
		},
	}, {
		name: "a message without arguments is not a format",
		record: func(s *Store) {
			s.Eventf(web, "", v1.EventTypeWarning, "Failed", "disk 100% full")
		},
		want: v1.Event{
			InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web-node1", UID: web.UID},
			Type:           v1.EventTypeWarning, Reason: "Failed", Message: "disk 100% full",
			Source: v1.EventSource{Component: "podvisor", Host: "node1"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestStore(t)
			tc.record(s)
			evs := s.Events()
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			e := evs[0]
			if e.InvolvedObject != tc.want.InvolvedObject {
				t.Errorf("InvolvedObject = %+v, want %+v", e.InvolvedObject, tc.want.InvolvedObject)
			}
			if e.Type != tc.want.Type || e.Reason != tc.want.Reason || e.Message != tc.want.Message {
				t.Errorf("type/reason/message = %s/%s/%q, want %s/%s/%q", e.Type, e.Reason, e.Message, tc.want.Type, tc.want.Reason, tc.want.Message)
			}
			if e.Source != tc.want.Source || e.ReportingInstance != tc.want.Source.Host {
				t.Errorf("source = %+v (instance %q), want %+v", e.Source, e.ReportingInstance, tc.want.Source)
			}
			if e.Namespace != "default" || e.Count != 1 || e.ReportingController != EventReportingController {
				t.Errorf("namespace %q, count %d, controller %q", e.Namespace, e.Count, e.ReportingController)
			}
		})
	}
}

// recorded is a Recorder that keeps what it is given.
type recorded struct {
	name string
	log  *[]string
}

func (r recorded) Record(e Event) { *r.log = append(*r.log, r.name+":"+e.Reason) }

func TestRecorders(t *testing.T) {
	var log []string
	a, b := recorded{"a", &log}, recorded{"b", &log}
	s, _ := newTestStore(t)
	r := Recorders(a, nil, s, b)
	r.Record(Event{Pod: testPod("default", "web-node1"), Type: v1.EventTypeNormal, Reason: "Started", Message: "m"})
	r.Record(Event{Node: "node1", Type: v1.EventTypeNormal, Reason: "Starting", Message: "m"})
	if got, want := strings.Join(log, " "), "a:Started b:Started a:Starting b:Starting"; got != want {
		t.Errorf("recorders saw %q, want %q", got, want)
	}
	if evs := s.Events(); len(evs) != 2 || evs[0].Reason != "Started" || evs[1].Reason != "Starting" {
		t.Errorf("store got %+v, want Started and Starting", evs)
	}

	if one := Recorders(nil, s); one != Recorder(s) {
		t.Errorf("Recorders of one = %T, want the recorder itself", one)
	}
	Recorders().Record(Event{Reason: "nobody"}) // no recorders: nothing happens, nothing panics

	var got []Event
	RecorderFunc(func(e Event) { got = append(got, e) }).Record(Event{Reason: "Killing"})
	if len(got) != 1 || got[0].Reason != "Killing" {
		t.Errorf("RecorderFunc got %+v", got)
	}
}
