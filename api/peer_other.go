//go:build !linux

package api

import (
	"net"
	"os"
)

// peerUID, where SO_PEERCRED does not exist, answers the client's own uid:
// no check is made (podvisor runs on Linux only; this keeps the client
// building elsewhere).
func peerUID(conn *net.UnixConn) (int, error) {
	return os.Geteuid(), nil
}

// peerCred, where SO_PEERCRED does not exist, answers this process's uid
// and no pid.
func peerCred(conn *net.UnixConn) (Peer, error) {
	return Peer{UID: os.Geteuid()}, nil
}
