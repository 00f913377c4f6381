//go:build !linux

package cni

import (
	"context"
	"errors"
	"net"
)

// DialInNetNS is only implemented on Linux.
func DialInNetNS(ctx context.Context, nsPath, addr string) (net.Conn, error) {
	return nil, errors.ErrUnsupported
}
