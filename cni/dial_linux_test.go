package cni

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestDialInNetNS: the connection is made from inside the namespace (a
// fresh one, whose loopback is down, cannot reach a listener of the
// host's), and the dialling thread goes back to the host's namespace.
func TestDialInNetNS(t *testing.T) {
	requireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	path := filepath.Join(t.TempDir(), "ns")
	t.Cleanup(func() { _ = RemoveNetNS(path) })
	if err := NewNetNS(path); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if c, err := DialInNetNS(ctx, path, ln.Addr().String()); err == nil {
		c.Close()
		t.Fatalf("dialled the host's %s from inside a fresh namespace", ln.Addr())
	}
	// The host's own namespace, by its /proc path, reaches it: the path
	// is entered, not ignored.
	c, err := DialInNetNS(ctx, "/proc/self/ns/net", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial in the host's namespace: %v", err)
	}
	c.Close()
	for range 20 { // every thread the runtime may pick is the host's again
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatalf("dial from the host after DialInNetNS: %v", err)
		}
		c.Close()
	}
	if _, err := DialInNetNS(ctx, filepath.Join(t.TempDir(), "missing"), ln.Addr().String()); err == nil {
		t.Error("DialInNetNS with a missing namespace succeeded")
	}
}
