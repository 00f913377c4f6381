package api

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID returns the uid of the process that serves the socket conn is
// connected to, as the kernel recorded it when that process listened
// (SO_PEERCRED): it cannot be forged by the server.
func peerUID(conn *net.UnixConn) (int, error) {
	c, err := peerCred(conn)
	if err != nil {
		return 0, err
	}
	return c.UID, nil
}

// peerCred returns who is at the other end of conn as the kernel recorded
// it at connect or listen (SO_PEERCRED).
func peerCred(conn *net.UnixConn) (Peer, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if credErr != nil {
		return Peer{}, credErr
	}
	return Peer{UID: int(cred.Uid), PID: int(cred.Pid)}, nil
}
