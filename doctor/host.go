package doctor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containernetworking/cni/libcni"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	"golang.org/x/sys/unix"
)

// containerdConn is the containerd dialed once for the checks that need
// it: client is nil when it did not answer, err says why.
type containerdConn struct {
	client  *containerd.Client
	version string
	err     error
}

func (c *containerdConn) close() {
	if c.client != nil {
		c.client.Close()
	}
}

// dialContainerd connects to containerd and asks its version, bounded by
// o.Timeout.
func dialContainerd(ctx context.Context, o Options) *containerdConn {
	if _, err := os.Stat(o.ContainerdAddress); err != nil {
		return &containerdConn{err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	client, err := containerd.New(o.ContainerdAddress, containerd.WithDefaultNamespace(o.ContainerdNamespace), containerd.WithTimeout(o.Timeout))
	if err != nil {
		return &containerdConn{err: err}
	}
	v, err := client.Version(ctx)
	if err != nil {
		client.Close()
		return &containerdConn{err: err}
	}
	return &containerdConn{client: client, version: v.Version}
}

func (c *containerdConn) finding(o Options) Finding {
	const check = "containerd"
	if c.err == nil {
		return ok(check, "containerd %s answers at %s", c.version, o.ContainerdAddress)
	}
	if o.EmbeddedContainerd {
		return warn(check, "none needed if podvisor is stopped: podvisor run starts it (--embedded-containerd)",
			"podvisor's embedded containerd does not answer at %s: %v", o.ContainerdAddress, c.err)
	}
	return fail(check, "start containerd (systemctl start containerd), or give --containerd-address its socket",
		"containerd does not answer at %s: %v", o.ContainerdAddress, c.err)
}

// checkRuntime looks for runc, the runtime containerd's runc shim
// (io.containerd.runc.v2) runs, and the shim itself, on o.Path.
func checkRuntime(ctx context.Context, o Options) []Finding {
	const check = "runc"
	var out []Finding
	for _, bin := range []string{"runc", "containerd-shim-runc-v2"} {
		path, err := lookPath(bin, o.Path)
		if err != nil {
			out = append(out, fail(check, "install "+bin+" (Debian: apt install runc containerd) on containerd's PATH",
				"%s not found in PATH %s", bin, o.Path))
			continue
		}
		if bin != "runc" {
			out = append(out, ok(check, "%s at %s", bin, path))
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		b, err := exec.CommandContext(cctx, path, "--version").Output()
		cancel()
		if err != nil {
			out = append(out, fail(check, "reinstall runc (apt install --reinstall runc)", "%s --version: %v", path, err))
			continue
		}
		first, _, _ := strings.Cut(string(b), "\n")
		out = append(out, ok(check, "%s at %s", first, path))
	}
	return out
}

// lookPath is exec.LookPath on path instead of $PATH.
func lookPath(bin, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, bin)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// neededControllers are the cgroup controllers podvisor writes to
// (supervise/cgroups.go: cpu.shares/cpu.weight and cpu.max, memory
// limits, pids.max).
var neededControllers = []string{"cpu", "memory", "pids"}

// checkCgroups finds the cgroup version and the controllers podvisor
// needs: on v2 in the root's cgroup.controllers, on v1 enabled in
// /proc/cgroups and mounted as a hierarchy under the root.
func checkCgroups(o Options) []Finding {
	const check = "cgroups"
	var have []string
	version := "v1"
	if cgroupfs.IsV2(o.CgroupRoot) {
		version = "v2"
		b, err := os.ReadFile(filepath.Join(o.CgroupRoot, "cgroup.controllers"))
		if err != nil {
			return []Finding{fail(check, "mount cgroup2 at "+o.CgroupRoot, "%v", err)}
		}
		have = strings.Fields(string(b))
	} else {
		enabled, err := enabledV1(filepath.Join(o.ProcRoot, "cgroups"))
		if err != nil {
			return []Finding{fail(check, "mount the cgroup hierarchies (systemd does at boot)", "%v", err)}
		}
		entries, err := os.ReadDir(o.CgroupRoot)
		if err != nil {
			return []Finding{fail(check, "mount the cgroup hierarchies at "+o.CgroupRoot+" (systemd does at boot)", "%v", err)}
		}
		for _, e := range entries {
			for _, c := range strings.Split(e.Name(), ",") {
				if enabled[c] && e.IsDir() {
					have = append(have, c)
				}
			}
		}
	}
	var missing []string
	for _, c := range neededControllers {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return []Finding{fail(check, "enable the controllers (kernel command line cgroup_enable="+strings.Join(missing, ",")+") and reboot",
			"cgroup %s at %s lacks the controllers %s podvisor limits pods with (has %s)", version, o.CgroupRoot, strings.Join(missing, ", "), strings.Join(have, " "))}
	}
	return []Finding{ok(check, "cgroup %s at %s with %s", version, o.CgroupRoot, strings.Join(neededControllers, ", "))}
}

// enabledV1 reads /proc/cgroups: the controllers enabled.
func enabledV1(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 4 && !strings.HasPrefix(fields[0], "#") && fields[3] == "1" {
			out[fields[0]] = true
		}
	}
	return out, sc.Err()
}

// sysctl reads a sysctl under o.ProcRoot/sys, named with dots.
func sysctl(o Options, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(o.ProcRoot, "sys", strings.ReplaceAll(name, ".", "/")))
	return strings.TrimSpace(string(b)), err
}

// checkSysctls checks that the node forwards IPv4 (pods reach anything
// beyond the node through it) and, for a network with a bridge plugin,
// that bridged traffic goes through iptables (br_netfilter), as kubeadm's
// preflight does.
func checkSysctls(o Options, net *libcni.NetworkConfigList) []Finding {
	var out []Finding
	const fwd = "net.ipv4.ip_forward"
	switch v, err := sysctl(o, fwd); {
	case err != nil:
		out = append(out, fail("ip_forward", "check that "+o.ProcRoot+" is procfs", "read %s: %v", fwd, err))
	case v != "1" && forwarder(net) != "":
		out = append(out, warn("ip_forward", "sysctl -w "+fwd+"=1, and persist it in /etc/sysctl.d/99-podvisor.conf",
			"%s is %s: the %s plugin of network %s turns it on when it attaches a pod", fwd, v, forwarder(net), net.Name))
	case v != "1":
		out = append(out, fail("ip_forward", "sysctl -w "+fwd+"=1, and persist it in /etc/sysctl.d/99-podvisor.conf",
			"%s is %s: pods cannot reach beyond the node", fwd, v))
	default:
		out = append(out, ok("ip_forward", "%s is 1", fwd))
	}
	if net == nil || !slices.ContainsFunc(net.Plugins, func(p *libcni.PluginConfig) bool { return p.Network.Type == "bridge" }) {
		return out
	}
	const nf = "net.bridge.bridge-nf-call-iptables"
	switch v, err := sysctl(o, nf); {
	case errors.Is(err, os.ErrNotExist):
		out = append(out, warn("br_netfilter", "modprobe br_netfilter, and persist it in /etc/modules-load.d/podvisor.conf",
			"br_netfilter is not loaded (no %s): traffic between pods on the bridge %s bypasses iptables", nf, net.Name))
	case err != nil:
		out = append(out, warn("br_netfilter", "check that "+o.ProcRoot+" is procfs", "read %s: %v", nf, err))
	case v != "1":
		out = append(out, warn("br_netfilter", "sysctl -w "+nf+"=1, and persist it in /etc/sysctl.d/99-podvisor.conf",
			"%s is %s: traffic between pods on the bridge network %s bypasses iptables", nf, v, net.Name))
	default:
		out = append(out, ok("br_netfilter", "%s is 1 (bridge network %s)", nf, net.Name))
	}
	return out
}

// forwarder is the plugin of net that turns IPv4 forwarding on as it
// attaches a pod (bridge with isGateway, ptp), as the reference plugins
// do; "" when none does.
func forwarder(net *libcni.NetworkConfigList) string {
	if net == nil {
		return ""
	}
	for _, p := range net.Plugins {
		var conf struct {
			IsGateway bool `json:"isGateway"`
		}
		switch t := p.Network.Type; {
		case t == "ptp":
			return t
		case t == "bridge" && json.Unmarshal(p.Bytes, &conf) == nil && conf.IsGateway:
			return t
		}
	}
	return ""
}

// checkClock says whether the kernel's clock is synchronized (NTP sets
// it so through adjtimex; timedatectl's "System clock synchronized" is
// the same bit) and reads the boot ID podvisor tells reboots by.
func checkClock(o Options) []Finding {
	var out []Finding
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	switch {
	case err != nil:
		out = append(out, warn("clock", "run podvisor doctor as root", "adjtimex: %v", err))
	case state == unix.TIME_ERROR || tx.Status&unix.STA_UNSYNC != 0:
		out = append(out, warn("clock", "enable time synchronization: timedatectl set-ntp true (or chrony, ntpd)",
			"the system clock is not synchronized: certificates, probes' and logs' times may be off"))
	default:
		out = append(out, ok("clock", "the system clock is synchronized"))
	}
	id, err := sysctl(o, "kernel.random.boot_id")
	if err != nil || id == "" {
		out = append(out, fail("boot-id", "mount procfs at "+o.ProcRoot, "cannot read the boot ID (kernel.random.boot_id): %v", err))
	} else {
		out = append(out, ok("boot-id", "boot ID %s", id))
	}
	return out
}
