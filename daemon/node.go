package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/podvisor/podvisor/internal/layout"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/validation"
)

// lockStateDir takes an exclusive lock on the state dir so a second
// podvisor refuses to start.
func lockStateDir(dir string) (func(), error) {
	p := layout.Layout{StateDir: dir}.LockFile()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		other, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another podvisor (pid %s) is running with state dir %s", strings.TrimSpace(string(other)), dir)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}

// normalNodeName is a given node name as podvisor uses it: trimmed and
// lowercased, as kubelet lowercases the hostname.
func normalNodeName(given string) string {
	return strings.ToLower(strings.TrimSpace(given))
}

// NodeName is the node's name: the given one (lowercased) if any, else
// the one remembered in stateDir, else the lowercased hostname. With a
// stateDir the result is remembered there, so a later hostname change
// renames no pod; `podvisor validate` passes none.
func NodeName(given, stateDir string) (string, error) {
	name := normalNodeName(given)
	var p string
	from := "" // where a name not given came from
	if stateDir != "" {
		p = layout.Layout{StateDir: stateDir}.NodeNameFile()
		if name == "" {
			if b, err := os.ReadFile(p); err == nil {
				name, from = strings.TrimSpace(string(b)), "the name remembered in "+p
			}
		}
	}
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("hostname: %w", err)
		}
		name, from = normalNodeName(h), "the hostname"
	}
	// A given name is checked by Validate; one found here is checked now,
	// before any pod is named for it (the apiserver would refuse the Node
	// much later).
	if from != "" {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return "", invalidError{fmt.Errorf("node name %q (%s) is not a valid node name: %s; give --node-name", name, from, strings.Join(errs, "; "))}
		}
	}
	if p != "" {
		// Written only when it differs: a start changes nothing on the
		// state disk that it need not.
		if b, err := os.ReadFile(p); err != nil || string(b) != name+"\n" {
			if err := os.WriteFile(p, []byte(name+"\n"), 0o644); err != nil {
				return "", fmt.Errorf("remember node name: %w", err)
			}
		}
	}
	return name, nil
}

// defaultNodeIP picks the first global unicast IPv4 address of an up,
// non-loopback interface that is not a pod bridge.
func defaultNodeIP() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || strings.HasPrefix(i.Name, "podvisor") || strings.HasPrefix(i.Name, "cni") || strings.HasPrefix(i.Name, "veth") {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return ""
}

// findLogDriver returns the podvisor-log-driver beside podvisor's own
// executable, or podvisor itself (which can do the same job, at a higher
// cost per container) when it is not there.
func findLogDriver(self string) string {
	p := filepath.Join(filepath.Dir(self), "podvisor-log-driver")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return p
	}
	return self
}
