package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestPodsSummary(t *testing.T) {
	pod := func(phase v1.PodPhase) v1.Pod { return v1.Pod{Status: v1.PodStatus{Phase: phase}} }
	for _, tc := range []struct {
		pods []v1.Pod
		want string
	}{
		{nil, "0 pods: 0 running, 0 pending, 0 failed"},
		{[]v1.Pod{pod(v1.PodRunning)}, "1 pod: 1 running, 0 pending, 0 failed"},
		{[]v1.Pod{pod(v1.PodRunning), pod(v1.PodPending), pod(""), pod(v1.PodFailed)}, "4 pods: 1 running, 2 pending, 1 failed"},
		{[]v1.Pod{pod(v1.PodSucceeded), pod(v1.PodRunning)}, "2 pods: 1 running, 0 pending, 0 failed, 1 succeeded"},
	} {
		if got := podsSummary(tc.pods); got != tc.want {
			t.Errorf("podsSummary = %q, want %q", got, tc.want)
		}
	}
}

// READY=1 waits for synced, STOPPING=1 ends it; nothing else in between
// while the pods do not change.
func TestServiceNotifier(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func(wait time.Duration) (string, error) {
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(wait))
		n, err := conn.Read(buf)
		return string(buf[:n]), err
	}
	expect := func(want string) {
		t.Helper()
		got, err := read(5 * time.Second)
		if err != nil || got != want {
			t.Fatalf("got %q (%v), want %q", got, err, want)
		}
	}
	t.Setenv("NOTIFY_SOCKET", addr)
	t.Setenv("WATCHDOG_USEC", "4000000")
	sd, err := newServiceNotifier(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("NOTIFY_SOCKET") != "" || os.Getenv("WATCHDOG_USEC") != "" {
		t.Error("NOTIFY_SOCKET or WATCHDOG_USEC left for children to inherit")
	}
	if sd.watchdogInterval() != 2*time.Second || sd.heartbeat() == nil {
		t.Errorf("watchdog interval %v, want 2s with a heartbeat", sd.watchdogInterval())
	}
	expect("STATUS=starting\n")

	var ready atomic.Bool
	var asked atomic.Int64
	synced := func() bool { asked.Add(1); return ready.Load() }
	pods := func() []v1.Pod { return []v1.Pod{{Status: v1.PodStatus{Phase: v1.PodRunning}}} }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sd.run(ctx, synced, pods) }()
	stop := func() { cancel(); <-done }
	expect("STATUS=syncing pods\n")
	for deadline := time.Now().Add(5 * time.Second); asked.Load() < 3; {
		if time.Now().After(deadline) {
			t.Fatal("synced is not polled")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	if got, err := read(0); err == nil {
		t.Fatalf("%q sent before the first sync", got)
	}
	ready.Store(true)
	expect("READY=1\nSTATUS=1 pod: 1 running, 0 pending, 0 failed\n")
	stop()
	expect("STOPPING=1\nSTATUS=stopping; pods keep running\n")
}
