package api

import (
	"context"
	"strings"
	"testing"
	"time"
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
	go func() { first <- c.Exec(t.Context(), "web", []string{"hold"}, StreamOptions{}) }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first session did not start")
	}
	err := c.Exec(t.Context(), "web", []string{"true"}, StreamOptions{})
	if err == nil || !strings.Contains(err.Error(), "too many exec and attach sessions: 1 are open on this podvisor; try again when one ends") {
		t.Fatalf("a session beyond the limit: %v", err)
	}
	if err := c.Attach(t.Context(), "web", StreamOptions{}); err == nil || !strings.Contains(err.Error(), "too many exec and attach sessions") {
		t.Fatalf("an attach beyond the limit: %v", err)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("first session: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Exec(t.Context(), "web", []string{"true"}, StreamOptions{})
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
