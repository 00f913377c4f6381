package testenv

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// lockDirs hold one lock file per /24; the first writable one is used.
// An flock is released by the kernel when its holder dies, so a crashed
// test run never leaks a reservation.
var lockDirs = []string{"/run/podvisor-testenv", filepath.Join(os.TempDir(), "podvisor-testenv")}

// pickSubnet returns a /24 of 10.222.0.0/16 that no host route or address
// overlaps and that no other live Env holds, plus the locked file that
// reserves it until closed. Parallel test packages each Start an Env, so
// a route check alone would race while their bridges do not exist yet.
func pickSubnet() (*net.IPNet, *os.File, error) {
	lockDir := ""
	for _, d := range lockDirs {
		if err := os.MkdirAll(d, 0o755); err == nil {
			lockDir = d
			break
		}
	}
	if lockDir == "" {
		return nil, nil, fmt.Errorf("pick subnet: no writable lock dir among %v", lockDirs)
	}
	used, err := hostNets()
	if err != nil {
		return nil, nil, fmt.Errorf("pick subnet: %w", err)
	}
	for _, third := range mrand.Perm(256) {
		subnet := &net.IPNet{IP: net.IPv4(10, 222, byte(third), 0).To4(), Mask: net.CIDRMask(24, 32)}
		if overlapsAny(subnet, used) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(lockDir, "subnet-10.222."+fmt.Sprint(third)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("pick subnet: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue
			}
			return nil, nil, fmt.Errorf("pick subnet: lock: %w", err)
		}
		return subnet, f, nil
	}
	return nil, nil, errors.New("pick subnet: every /24 of 10.222.0.0/16 is in use")
}

// hostNets returns the IPv4 networks of the main routing table (except
// default routes) and of every interface address.
func hostNets() ([]*net.IPNet, error) {
	var nets []*net.IPNet
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("interface addresses: %w", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			nets = append(nets, n)
		}
	}
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		dst, err1 := procIPv4(fields[1])
		mask, err2 := procIPv4(fields[7])
		if err1 != nil || err2 != nil {
			continue
		}
		if ones, _ := net.IPMask(mask).Size(); ones == 0 {
			continue // a default route overlaps everything and means nothing here
		}
		nets = append(nets, &net.IPNet{IP: dst, Mask: net.IPMask(mask)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	return nets, nil
}

// procIPv4 decodes an address of /proc/net/route (hex, host byte order,
// which is little-endian on every platform podvisor runs on).
func procIPv4(s string) (net.IP, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return nil, fmt.Errorf("bad address %q", s)
	}
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, binary.LittleEndian.Uint32(b))
	return ip, nil
}

// overlapsAny reports whether n overlaps any of nets.
func overlapsAny(n *net.IPNet, nets []*net.IPNet) bool {
	for _, o := range nets {
		if o.Contains(n.IP) || n.Contains(o.IP) {
			return true
		}
	}
	return false
}
