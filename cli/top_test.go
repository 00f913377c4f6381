package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/stats"
	"github.com/podvisor/podvisor/status"
)

var topT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func sampleAt(d time.Duration, busyNanos uint64, busyID string) *stats.Summary {
	at := topT0.Add(d)
	yes := true
	return &stats.Summary{Time: at, Pods: []stats.Pod{{
		Namespace: "default", Name: "busy-n", UID: "u", Phase: "Running",
		Containers: []stats.Container{
			{Name: "init", Init: true, State: "terminated", Reason: "Completed"},
			{Name: "loop", ID: busyID, State: "running", Started: &yes, Ready: true, RestartCount: 2,
				Probes: map[string]string{"readiness": "Success", "liveness": "Failure"},
				CPU:    &stats.CPU{Time: at, UsageCoreNanoSeconds: busyNanos}, Memory: &stats.Memory{Time: at, WorkingSetBytes: 3 << 20}},
			{Name: "idle", ID: "i1", State: "running", Ready: false,
				CPU: &stats.CPU{Time: at, UsageCoreNanoSeconds: 5}, Memory: &stats.Memory{Time: at, WorkingSetBytes: 1 << 20}},
		},
	}}}
}

func TestTopRows(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, cur *stats.Summary
		want      string
	}{{
		name: "two samples: millicores from the difference",
		prev: sampleAt(0, 1e9, "c1"), cur: sampleAt(2*time.Second, 2.5e9, "c1"),
		want: `NAMESPACE   POD      CONTAINER   CPU(cores)   MEMORY(bytes)   RESTARTS   STATE                    STARTED   READY   PROBES
default     busy-n   -           750m         4Mi             2          Running                  -         1/2     -
default     busy-n   init        -            -               0          terminated (Completed)   -         false   -
default     busy-n   loop        750m         3Mi             2          running                  true      true    liveness=Failure,readiness=Success
default     busy-n   idle        0m           1Mi             0          running                  -         false   -
`,
	}, {
		name: "one sample: CPU unknown",
		cur:  sampleAt(0, 1e9, "c1"),
		want: `NAMESPACE   POD      CONTAINER   CPU(cores)   MEMORY(bytes)   RESTARTS   STATE                    STARTED   READY   PROBES
default     busy-n   -           -            4Mi             2          Running                  -         1/2     -
default     busy-n   init        -            -               0          terminated (Completed)   -         false   -
default     busy-n   loop        -            3Mi             2          running                  true      true    liveness=Failure,readiness=Success
default     busy-n   idle        -            1Mi             0          running                  -         false   -
`,
	}, {
		name: "restarted in between: its CPU is not a difference",
		prev: sampleAt(0, 9e9, "c1"), cur: sampleAt(time.Second, 1e9, "c2"),
		want: `NAMESPACE   POD      CONTAINER   CPU(cores)   MEMORY(bytes)   RESTARTS   STATE                    STARTED   READY   PROBES
default     busy-n   -           -            4Mi             2          Running                  -         1/2     -
default     busy-n   init        -            -               0          terminated (Completed)   -         false   -
default     busy-n   loop        -            3Mi             2          running                  true      true    liveness=Failure,readiness=Success
default     busy-n   idle        0m           1Mi             0          running                  -         false   -
`,
	}} {
		var b bytes.Buffer
		writeTop(&b, topRows(tc.prev, tc.cur))
		if b.String() != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// rampStats is a StatsSource whose one container uses half a core: each
// call is a second later with half a second more CPU.
type rampStats struct {
	mu sync.Mutex
	n  int
}

func (r *rampStats) Stats() stats.Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return *sampleAt(time.Duration(r.n)*time.Second, uint64(r.n)*5e8, "c1")
}

// TestTopPlain: not on a terminal, top prints one table (no escapes) with
// the CPU of two samples, or one per refresh with --watch.
func TestTopPlain(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "podvisor.sock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- api.Serve(ctx, api.Options{Socket: socket, Store: status.NewStore(nil), Stats: &rampStats{}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	serveWait(t, socket)

	run := func(args ...string) (string, string, int) {
		return runCLI(t, append([]string{"top", "--socket", socket, "--interval", "10ms"}, args...)...)
	}
	out, errOut, code := run()
	if code != 0 {
		t.Fatal(errOut)
	}
	if strings.Count(out, "NAMESPACE") != 1 || strings.Contains(out, "\x1b") || !strings.Contains(out, "loop        500m") {
		t.Errorf("top printed:\n%q", out)
	}

	wctx, wcancel := context.WithCancel(t.Context())
	var out2 bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Count(out2.String()+string(p), "NAMESPACE") >= 3 {
			wcancel()
		}
		return out2.Write(p)
	})
	var errOut2 bytes.Buffer
	if code := runCLIContext(wctx, w, &errOut2, "top", "--socket", socket, "--interval", "10ms", "--watch"); code != 0 {
		t.Fatalf("top --watch ended with %d: %s", code, errOut2.String())
	}
	if n := strings.Count(out2.String(), "NAMESPACE"); n < 3 {
		t.Errorf("top --watch printed %d tables", n)
	}

	if _, errOut, code := run("--interval", "0s"); code != 2 || !strings.Contains(errOut, "--interval") {
		t.Errorf("--interval 0s: code %d, %s", code, errOut)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func serveWait(t *testing.T, socket string) {
	t.Helper()
	c := api.NewClient(socket)
	for deadline := time.Now().Add(5 * time.Second); c.Healthz(t.Context()) != nil; {
		if time.Now().After(deadline) {
			t.Fatal("API did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}
