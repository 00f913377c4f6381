package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/stats"
	"github.com/podvisor/podvisor/status"
	"github.com/prometheus/client_golang/prometheus"
)

type fixedStats stats.Summary

func (f fixedStats) Stats() stats.Summary { return stats.Summary(f) }

// TestMetricsAndStats: /metrics serves the Gatherer's series and /stats the
// StatsSource's figures, through the Client over the socket.
func TestMetricsAndStats(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "podvisor_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fixed := fixedStats{Time: at, Pods: []stats.Pod{{Namespace: "default", Name: "p-n", UID: "u", Phase: "Running",
		Containers: []stats.Container{{Name: "c", ID: "id", State: "running", CPU: &stats.CPU{Time: at, UsageCoreNanoSeconds: 42},
			Memory: &stats.Memory{Time: at, WorkingSetBytes: 7}, Probes: map[string]string{"liveness": "Success"}}}}}}

	socket := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Socket: socket, Store: status.NewStore(nil), Gatherer: reg, Stats: fixed})
	}()
	defer func() { cancel(); <-done }()
	client := NewClient(socket)
	for deadline := time.Now().Add(5 * time.Second); client.Healthz(t.Context()) != nil; {
		if time.Now().After(deadline) {
			t.Fatal("server did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}

	body, err := client.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "\npodvisor_test_total 3\n") {
		t.Errorf("/metrics lacks the counter:\n%s", body)
	}
	got, err := client.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	gc := got.Pods[0].Containers[0]
	if !got.Time.Equal(at) || gc.CPU.UsageCoreNanoSeconds != 42 || gc.Memory.WorkingSetBytes != 7 || gc.Probes["liveness"] != "Success" {
		t.Errorf("Stats round trip: %+v", got)
	}
}

// TestMetricsOffWithoutSource: without a Gatherer or a StatsSource the
// endpoints do not exist.
func TestMetricsOffWithoutSource(t *testing.T) {
	h := newHandler(Options{Store: status.NewStore(nil)})
	for _, path := range []string{"/metrics", "/stats"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s without a source: %d, want 404", path, rec.Code)
		}
	}
}
