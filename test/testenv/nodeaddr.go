package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
)

// Gateway returns the address the test network's bridge holds as the
// pods' gateway (the first of Subnet), creating the bridge with that
// address now if no pod has joined the network yet (the bridge plugin
// then finds it as it would have made it). It is a host address that is
// not loopback, on a bridge the test made: what a test gives podvisor as
// --node-ip when something (the apiserver's node proxy) refuses
// loopback. Stop deletes the bridge.
func (e *Env) Gateway() (net.IP, error) {
	gw := make(net.IP, 4)
	copy(gw, e.Subnet.IP.To4())
	gw[3]++
	if _, err := net.InterfaceByName(e.Bridge); err != nil {
		if err := ipCmd("link", "add", "name", e.Bridge, "type", "bridge"); err != nil {
			return nil, err
		}
	}
	ones, _ := e.Subnet.Mask.Size()
	has, err := hasAddr(e.Bridge, gw)
	if err != nil {
		return nil, err
	}
	if !has {
		if err := ipCmd("addr", "add", fmt.Sprintf("%s/%d", gw, ones), "dev", e.Bridge); err != nil {
			return nil, err
		}
	}
	if err := ipCmd("link", "set", e.Bridge, "up"); err != nil {
		return nil, err
	}
	return gw, nil
}

func hasAddr(link string, ip net.IP) (bool, error) {
	ifi, err := net.InterfaceByName(link)
	if err != nil {
		return false, fmt.Errorf("link %s: %w", link, err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return false, fmt.Errorf("link %s: addresses: %w", link, err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true, nil
		}
	}
	return false, nil
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %v: %v: %s", args, err, bytes.TrimSpace(out))
	}
	return nil
}
