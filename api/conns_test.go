package api

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestConnCap: beyond maxConns a client of the socket waits, and is
// served once a connection closes.
func TestConnCap(t *testing.T) {
	saved := maxConns
	maxConns = 2
	defer func() { maxConns = saved }()
	socket := filepath.Join(t.TempDir(), "s.sock")
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		done <- Serve(ctx, Options{Socket: socket, Store: fakeStore{}, Log: slog.New(slog.DiscardHandler)})
	}()
	defer func() { cancel(); <-done }()
	c := NewClient(socket)
	deadline := time.Now().Add(5 * time.Second)
	for c.Healthz(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	c.http.CloseIdleConnections()
	var held []net.Conn
	for range 2 {
		conn, err := net.Dial("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
		defer conn.Close()
	}
	// Wait until both are accepted: the server is at its cap then.
	answered := make(chan error, 1)
	go func() { answered <- c.Healthz(t.Context()) }()
	select {
	case err := <-answered:
		t.Fatalf("a third connection was served beyond the cap of 2 (%v)", err)
	case <-time.After(300 * time.Millisecond): // proving absence: a bounded wait
	}
	held[0].Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the waiting client: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting client was not served after a connection closed")
	}
}
