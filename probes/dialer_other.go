//go:build !unix

package probes

import "net"

func probeDialer() *net.Dialer { return &net.Dialer{} }
