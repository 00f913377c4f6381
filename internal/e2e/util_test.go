package e2e

import "net"

func netIP(s string) net.IP { return net.ParseIP(s) }
