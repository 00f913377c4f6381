package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLogged(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 15, 40, 42, 0, time.UTC)
	log := `time=2026-12-01T15:40:42.250Z level=INFO msg="imported image archive" file=/x/images/etcd.tar images=[registry.k8s.io/etcd:3.7.0-0]
time=2026-12-01T15:40:43.000Z level=WARN msg="node status" component=mirror node=bench err="dial tcp 127.0.0.1:6443: connect: connection refused" retry=1.1s
not a log line
time=2026-12-01T15:40:44.5Z level=INFO msg=started
time=2026-12-01T15:40:45.000Z level=INFO msg="node registered" component=mirror node=bench
`
	path := filepath.Join(t.TempDir(), "podvisor.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logged(path, t0)
	want := []struct {
		ms       float64
		msg, key string
		val      string
	}{
		{250, "imported image archive", "file", "/x/images/etcd.tar"},
		{1000, "node status", "node", "bench"},
		{2500, "started", "", ""},
		{3000, "node registered", "component", "mirror"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ms != w.ms || g.msg != w.msg {
			t.Errorf("line %d: %v ms %q, want %v ms %q", i, g.ms, g.msg, w.ms, w.msg)
		}
		if w.key != "" && g.attr(w.key) != w.val {
			t.Errorf("line %d: %s=%q, want %q", i, w.key, g.attr(w.key), w.val)
		}
	}
}
