package printers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testEvents() *v1.EventList {
	ref := v1.ObjectReference{Kind: "Pod", Name: "web-node1", Namespace: "default", FieldPath: "spec.containers{app}"}
	return &v1.EventList{Items: []v1.Event{
		{
			ObjectMeta:     metav1.ObjectMeta{Name: "web-node1.2"},
			InvolvedObject: ref, Type: v1.EventTypeWarning, Reason: "BackOff", Message: "Back-off restarting failed container app\n",
			FirstTimestamp: ago(600e9), LastTimestamp: ago(5e9), Count: 7,
			Source: v1.EventSource{Component: "podvisor", Host: "node1"},
		},
		{
			ObjectMeta:     metav1.ObjectMeta{Name: "node1.1"},
			InvolvedObject: v1.ObjectReference{Kind: "Node", Name: "node1"}, Type: v1.EventTypeNormal, Reason: "Starting",
			Message: "podvisor started", FirstTimestamp: ago(3600e9), LastTimestamp: ago(3600e9), Count: 1,
			ReportingController: "podvisor.io/podvisor",
		},
	}}
}

func TestPrintEvents(t *testing.T) {
	var b bytes.Buffer
	if err := PrintEvents(&b, testEvents(), "", printNow); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"LAST SEEN   TYPE      REASON     OBJECT          MESSAGE\n" +
		"60m         Normal    Starting   node/node1      podvisor started\n" +
		"5s          Warning   BackOff    pod/web-node1   Back-off restarting failed container app\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := PrintEvents(&b, testEvents(), "wide", printNow); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[0], "LAST SEEN   TYPE      REASON     OBJECT          SUBOBJECT              SOURCE                 MESSAGE") ||
		!strings.Contains(lines[2], "spec.containers{app}   podvisor, node1") || !strings.HasSuffix(lines[2], "10m          7       web-node1.2") ||
		!strings.Contains(lines[1], "podvisor.io/podvisor") {
		t.Errorf("wide:\n%s", b.String())
	}
	b.Reset()
	if err := PrintEvents(&b, testEvents(), "json", printNow); err != nil {
		t.Fatal(err)
	}
	var list v1.EventList
	if err := json.Unmarshal(b.Bytes(), &list); err != nil || list.Kind != "EventList" || len(list.Items) != 2 || list.Items[0].Reason != "Starting" || list.Items[1].Kind != "Event" {
		t.Errorf("json (%v): %s", err, b.String())
	}
	b.Reset()
	if err := PrintEvents(&b, &v1.EventList{}, "", printNow); err != nil || b.Len() != 0 {
		t.Errorf("empty list printed %q (%v)", b.String(), err)
	}
	if err := PrintEvents(&b, testEvents(), "name", printNow); err == nil {
		t.Error("unknown format accepted")
	}
}
