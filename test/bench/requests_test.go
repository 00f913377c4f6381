package main

import (
	"strings"
	"testing"
	"time"
)

func TestCountAudited(t *testing.T) {
	ev := func(id, stage, verb, user, res, sub, at string) string {
		return `{"kind":"Event","auditID":"` + id + `","stage":"` + stage + `","verb":"` + verb + `","user":{"username":"` + user +
			`"},"objectRef":{"resource":"` + res + `","subresource":"` + sub + `"},"requestURI":"/x","requestReceivedTimestamp":"` + at + `"}`
	}
	const node = "system:node:bench"
	log := strings.Join([]string{
		// A watch from before the window, still open: not counted, open.
		ev("w0", "ResponseStarted", "watch", node, "pods", "", "2026-01-01T00:00:00Z"),
		// Lease updates: one before, two in, one after the window.
		ev("l0", "ResponseComplete", "update", node, "leases", "", "2026-01-01T00:00:09Z"),
		ev("l1", "ResponseComplete", "update", node, "leases", "", "2026-01-01T00:00:10Z"),
		ev("l2", "ResponseComplete", "update", node, "leases", "", "2026-01-01T00:00:40Z"),
		ev("l3", "ResponseComplete", "update", node, "leases", "", "2026-01-01T00:01:10Z"),
		// A watch started and ended in the window: counted once, not open.
		ev("w1", "ResponseStarted", "watch", node, "nodes", "", "2026-01-01T00:00:20Z"),
		ev("w1", "ResponseComplete", "watch", node, "nodes", "", "2026-01-01T00:00:20Z"),
		// A watch started in the window, open: counted once, open.
		ev("w2", "ResponseStarted", "watch", node, "nodes", "", "2026-01-01T00:00:21Z"),
		ev("p1", "ResponseComplete", "patch", node, "pods", "status", "2026-01-01T00:00:30Z"),
		// Another user's request.
		ev("a1", "ResponseComplete", "update", "system:node:other", "leases", "", "2026-01-01T00:00:30Z"),
	}, "\n")
	from := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	got, err := countAudited(strings.NewReader(log), node, from, from.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.PerMinute != 5 {
		t.Errorf("PerMinute = %v, want 5 (2 lease updates, 2 watches, 1 status patch)", got.PerMinute)
	}
	want := []requestKind{
		{Verb: "update", Resource: "leases", Count: 2, PerMinute: 2},
		{Verb: "watch", Resource: "nodes", Count: 2, PerMinute: 2},
		{Verb: "patch", Resource: "pods/status", Count: 1, PerMinute: 1},
	}
	if len(got.Kinds) != len(want) {
		t.Fatalf("Kinds = %+v, want %+v", got.Kinds, want)
	}
	for i := range want {
		if got.Kinds[i] != want[i] {
			t.Errorf("Kinds[%d] = %+v, want %+v", i, got.Kinds[i], want[i])
		}
	}
	if strings.Join(got.OpenWatches, ",") != "nodes,pods" {
		t.Errorf("OpenWatches = %v, want [nodes pods]", got.OpenWatches)
	}
	if _, err := countAudited(strings.NewReader("{not json"), node, from, from); err == nil {
		t.Error("a line that is not JSON: no error")
	}
}
