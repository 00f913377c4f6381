package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
)

// Peer is the process at the other end of a local API connection, as the
// kernel recorded it when it connected (SO_PEERCRED): what the audit of a
// write on the socket names.
type Peer struct {
	UID, PID int
}

type peerKey struct{}

// withPeer is the socket server's ConnContext: it records who connected,
// once per connection.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	p, err := peerCred(uc)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// LocalPeer returns who sent a request that came through the unix socket;
// false for a request that did not (the TLS port).
func LocalPeer(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// ErrUntrustedSocket means the process serving the socket a Client dialed
// is neither root nor the client's own user: the client sends it nothing.
var ErrUntrustedSocket = errors.New("socket served by an untrusted user")

// peerError names the socket and the uid of the process that serves it.
type peerError struct {
	path      string
	peer, own int
}

func (e *peerError) Error() string {
	want := "root (uid 0)"
	if e.own != 0 {
		want = fmt.Sprintf("root (uid 0) or you (uid %d)", e.own)
	}
	return fmt.Sprintf("refusing %s: its server runs as uid %d, not %s; a socket another user planted would see what is sent, such as exec input",
		e.path, e.peer, want)
}

func (e *peerError) Unwrap() error { return ErrUntrustedSocket }

// trustPeer accepts a socket served by root or by the client's own uid.
func trustPeer(path string, peer, own int) error {
	if peer == 0 || peer == own {
		return nil
	}
	return &peerError{path: path, peer: peer, own: own}
}

// checkPeer refuses conn, dialed to the unix socket path, unless the
// process serving it is trusted (trustPeer). conn is closed when refused.
func checkPeer(conn net.Conn, path string) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		conn.Close()
		return fmt.Errorf("check %s: not a unix socket connection", path)
	}
	uid, err := peerUID(uc)
	if err == nil {
		err = trustPeer(path, uid, os.Geteuid())
	} else {
		err = fmt.Errorf("check who serves %s: %w", path, err)
	}
	if err != nil {
		conn.Close()
	}
	return err
}

// dialFailure returns the Client's own dial errors found in err (nothing
// answers; an untrusted server) as they are, so their message is not
// buried in the request's; nil when err is another error.
func dialFailure(err error) error {
	var ue *unreachableError
	if errors.As(err, &ue) {
		return ue
	}
	var pe *peerError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
