package embedded

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Config renders a containerd config.toml (version 2, which 2.x still
// reads) with root, state and sockets in the given places and the CRI
// plugins (and snapshotters that only log errors) disabled, for a daemon
// of major version major.
func Config(root, state, address, optDir string, major int) string {
	disabled := []string{
		"io.containerd.grpc.v1.cri",
		"io.containerd.snapshotter.v1.aufs",
		"io.containerd.snapshotter.v1.btrfs",
		"io.containerd.snapshotter.v1.devmapper",
		"io.containerd.snapshotter.v1.zfs",
	}
	if major >= 2 {
		disabled = append(disabled, "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime")
	}
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "version = 2\nroot = %s\nstate = %s\n", q(root), q(state))
	for i := range disabled {
		disabled[i] = q(disabled[i])
	}
	fmt.Fprintf(&b, "disabled_plugins = [%s]\n\n", strings.Join(disabled, ", "))
	fmt.Fprintf(&b, "[grpc]\n  address = %s\n\n[ttrpc]\n  address = %s\n\n", q(address), q(address+".ttrpc"))
	fmt.Fprintf(&b, "[plugins.%s]\n  path = %s\n", q("io.containerd.internal.v1.opt"), q(optDir))
	return b.String()
}

// Version runs `bin --version` and returns the version field, e.g.
// "1.6.20~ds1" or "v2.1.4".
func Version(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	// "containerd github.com/containerd/containerd[/v2] <version> <revision>"
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return "", fmt.Errorf("%s --version: unexpected output %q", bin, out)
	}
	return f[2], nil
}

// Major returns the major number of a containerd version, 1 when it cannot
// tell.
func Major(version string) int {
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 1
	}
	return n
}

// PrependPath returns env with dir first in PATH (a default PATH when env
// has none), so a daemon finds the shim beside it first.
func PrependPath(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + dir + ":" + v
			found = true
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, "PATH="+dir+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	return out
}
