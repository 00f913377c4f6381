package api

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/layout"
	v1 "k8s.io/api/core/v1"
)

// TestSessionLimit: exec and attach sessions beyond the daemon's limit
// are refused with a 429-style error naming the limit; once a session
// ends, a new one is served.
func TestSessionLimit(t *testing.T) {
	saved := maxStreamSessions
	maxStreamSessions = 1
	defer func() { maxStreamSessions = saved }()
	hold := make(chan struct{})
	started := make(chan struct{}, 4)
	c := serveStreams(t, fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, cmd []string, _ Session) (int, error) {
		started <- struct{}{}
		if len(cmd) > 0 && cmd[0] == "hold" {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		return 0, nil
	}})
	first := make(chan error, 1)
	go func() {
		first <- c.Exec(t.Context(), "default/web-node", []string{"hold"}, StreamOptions{Container: "app"})
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first session did not start")
	}
	err := c.Exec(t.Context(), "default/web-node", []string{"true"}, StreamOptions{Container: "app"})
	if err == nil || !strings.Contains(err.Error(), "too many exec, attach and port-forward sessions: 1 are open on this podvisor; try again when one ends") {
		t.Fatalf("a session beyond the limit: %v", err)
	}
	if err := c.Attach(t.Context(), "default/web-node", StreamOptions{Container: "app"}); err == nil || !strings.Contains(err.Error(), "too many exec, attach and port-forward sessions") {
		t.Fatalf("an attach beyond the limit: %v", err)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("first session: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Exec(t.Context(), "default/web-node", []string{"true"}, StreamOptions{Container: "app"})
		if err == nil {
			break
		}
		// The first session's token goes back as its handler returns,
		// just after its client saw the end.
		if time.Now().After(deadline) {
			t.Fatalf("a session after the first ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestFollowLimit: followed logs beyond the daemon's limit are refused
// with a 429-style error; a log read without follow is not limited; once
// a follow ends, a new one is served.
func TestFollowLimit(t *testing.T) {
	saved := maxLogFollows
	maxLogFollows = 1
	defer func() { maxLogFollows = saved }()
	dir := t.TempDir()
	socket, logDir := filepath.Join(dir, "s.sock"), filepath.Join(dir, "logs")
	pod := *staticPod("default", "web", "n")
	pod.Status.ContainerStatuses = []v1.ContainerStatus{running("containerd://b", 0, "")}
	store := &podStore{}
	store.set(pod)
	live := layout.Layout{LogDir: logDir}.ContainerLog("default", pod.Name, string(pod.UID), "app", 0)
	os.MkdirAll(filepath.Dir(live), 0o755)
	os.WriteFile(live, []byte(record(2, "stdout", "one")), 0o644)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Socket: socket, Store: store, LogDir: logDir, Log: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c := NewClient(socket)
	deadline := time.Now().Add(5 * time.Second)
	for c.Healthz(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	follow := &v1.PodLogOptions{Follow: true}
	first, err := c.Logs(t.Context(), "web", follow)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(first, buf); err != nil || string(buf) != "one\n" {
		t.Fatalf("first follow read %q, %v", buf, err)
	}
	if _, err := c.Logs(t.Context(), "web", follow); err == nil || !strings.Contains(err.Error(), "too many followed logs: 1 are open on this podvisor") {
		t.Fatalf("a follow beyond the limit: %v", err)
	}
	if body, err := c.Logs(t.Context(), "web", &v1.PodLogOptions{}); err != nil {
		t.Fatalf("a read without follow: %v", err)
	} else {
		body.Close()
	}
	first.Close()
	deadline = time.Now().Add(5 * time.Second)
	for {
		body, err := c.Logs(t.Context(), "web", follow)
		if err == nil {
			body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a follow after the first ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}
