package daemon

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHealthzLimits: a client that sends its request headers slowly (slow
// loris) is cut after the read-header timeout; an idle keep-alive
// connection after the idle timeout; beyond the connection cap a client
// waits until a connection closes, and is then served.
func TestHealthzLimits(t *testing.T) {
	saved := healthzLimits
	defer func() { healthzLimits = saved }()
	healthzLimits.readHeader, healthzLimits.read, healthzLimits.idle = time.Second, time.Second, 300*time.Millisecond
	healthzLimits.conns = 2
	h, err := listenHealthz("127.0.0.1:0", func() error { return nil }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { done <- h.run(ctx) }()
	defer func() { cancel(); <-done }()
	addr := h.ln.Addr().String()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// closedWithin reports whether the server closes c within d.
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		return err == nil // EOF: closed by the server; a timeout is an error
	}

	// Slow loris: half a request line, never finished.
	loris := dial()
	io.WriteString(loris, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	if !closedWithin(loris, 5*time.Second) {
		t.Fatal("a connection that never finishes its headers was not closed")
	}

	// The cap: two connections held open (idle before any request); a
	// third is not served until one goes.
	a, b := dial(), dial()
	c := dial()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond)) // proving absence: a bounded wait
	if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
		// Either held connection may already have timed out; only a
		// reply while both are open would be wrong.
		if !closedAlready(a) && !closedAlready(b) {
			t.Fatal("a third connection was served beyond the cap of 2")
		}
	}
	a.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the waiting connection after one closed: %v %v", resp, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 100))
	if !strings.Contains(string(body), "ok") {
		t.Errorf("body %q", body)
	}
	// Idle after its request: cut by the idle timeout.
	if !closedWithin(c, 5*time.Second) {
		t.Error("an idle keep-alive connection was not closed")
	}
}

// closedAlready reports whether the server has closed c.
func closedAlready(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}
