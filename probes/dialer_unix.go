//go:build unix

package probes

import (
	"net"
	"syscall"
)

// probeDialer is kubelet's probe dialer: SO_LINGER of one second, so the
// many short probe connections do not pile up in TIME_WAIT.
func probeDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(network, address string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}
