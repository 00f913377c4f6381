package cni

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
	"time"

	"golang.org/x/sys/unix"
)

const pluginDir = "/usr/lib/cni"

// testNet is a bridge network private to one test: its own bridge, /24 in
// 10.223.0.0/16, host-local state and CNI cache. No masquerade, no default
// route: pods on it can only talk to the host.
type testNet struct {
	name     string
	bridge   string
	subnet   *net.IPNet
	confDir  string
	dataDir  string
	cacheDir string
	nsDir    string
}

func requireCNI(t *testing.T) {
	t.Helper()
	requireRoot(t)
	if missing := prereq.CNIPlugins([]string{pluginDir}, "bridge", "host-local", "loopback"); len(missing) > 0 {
		prereq.Missing(t, strings.Join(missing, ", "))
	}
}

var (
	subnetsMu sync.Mutex
	subnets   = map[byte]bool{}
)

func newTestNet(t *testing.T) *testNet {
	t.Helper()
	requireCNI(t)
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tn := &testNet{
		name:     "pvt-" + hex.EncodeToString(suffix),
		bridge:   "pvc" + hex.EncodeToString(suffix),
		subnet:   freeSubnet(t),
		confDir:  filepath.Join(dir, "conf"),
		dataDir:  filepath.Join(dir, "networks"),
		cacheDir: filepath.Join(dir, "cache"),
		nsDir:    filepath.Join(dir, "netns"),
	}
	t.Cleanup(func() {
		if err := exec.Command("ip", "link", "del", tn.bridge).Run(); err != nil {
			t.Logf("delete bridge %s: %v", tn.bridge, err)
		}
	})
	if err := os.MkdirAll(tn.confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tn.writeConf(t, "10-test.conflist", tn.name)
	return tn
}

// freeSubnet picks a /24 in 10.223.0.0/16 that no route on the host covers
// and that no other test in this process uses.
func freeSubnet(t *testing.T) *net.IPNet {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatalf("ip route: %v", err)
	}
	var routed []*net.IPNet
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if dst == "local" || dst == "broadcast" || dst == "unicast" {
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if _, n, err := net.ParseCIDR(dst); err == nil {
			routed = append(routed, n)
		}
	}
	subnetsMu.Lock()
	defer subnetsMu.Unlock()
	b := make([]byte, 1)
	for range 256 {
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		if b[0] == 0 || b[0] == 255 || subnets[b[0]] {
			continue
		}
		cand := &net.IPNet{IP: net.IPv4(10, 223, b[0], 0).To4(), Mask: net.CIDRMask(24, 32)}
		if slices.ContainsFunc(routed, func(r *net.IPNet) bool { return r.Contains(cand.IP) || cand.Contains(r.IP) }) {
			continue
		}
		subnets[b[0]] = true
		return cand
	}
	t.Fatal("no free /24 in 10.223.0.0/16")
	return nil
}

// writeConf writes a bridge conflist named network into the conf dir.
func (tn *testNet) writeConf(t *testing.T, file, network string) {
	t.Helper()
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "subnet": %q, "dataDir": %q}
    }
  ]
}`, network, tn.bridge, tn.subnet.String(), tn.dataDir)
	if err := os.WriteFile(filepath.Join(tn.confDir, file), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (tn *testNet) manager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Config{ConfDir: tn.confDir, BinDirs: []string{pluginDir}, CacheDir: tn.cacheDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (tn *testNet) netns(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(tn.nsDir, name)
	if err := NewNetNS(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveNetNS(path) })
	return path
}

// ipReserved reports whether host-local holds ip for this network.
func (tn *testNet) ipReserved(network string, ip net.IP) bool {
	_, err := os.Stat(filepath.Join(tn.dataDir, network, ip.String()))
	return err == nil
}

func testPod(name string) PodRef {
	return PodRef{Namespace: "default", Name: name, UID: "uid-" + name}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAddCheckDel(t *testing.T) {
	tn := newTestNet(t)
	m := tn.manager(t)
	ctx := testCtx(t)
	ns := tn.netns(t, "sb1")
	pod := testPod("web")

	res, err := m.Add(ctx, "sb1", ns, pod, nil)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	if len(res.IPs) != 1 || !tn.subnet.Contains(res.IPs[0]) {
		t.Fatalf("Add IPs = %v, want one in %s", res.IPs, tn.subnet)
	}
	if res.Interface != "eth0" || res.Network != tn.name {
		t.Errorf("Add result = %+v, want eth0 on %s", res, tn.name)
	}
	ip := res.IPs[0]

	out := nsenter(t, ns, "ip", "-o", "addr", "show", "dev", "eth0")
	if !strings.Contains(out, " "+ip.String()+"/24") {
		t.Errorf("eth0 in the netns has %q, want address %s/24", out, ip)
	}
	if out := nsenter(t, ns, "ip", "-o", "link", "show", "dev", "lo"); !strings.Contains(out, ",UP") {
		t.Errorf("lo in the netns is not up: %q", out)
	}
	if !tn.ipReserved(tn.name, ip) {
		t.Errorf("host-local holds no reservation for %s", ip)
	}

	// Traffic: the host (given the gateway address on the bridge) reaches a
	// listener inside the pod namespace.
	gw := net.IPv4(10, 223, tn.subnet.IP[2], 1)
	if out, err := exec.Command("ip", "addr", "add", gw.String()+"/24", "dev", tn.bridge).CombinedOutput(); err != nil {
		t.Fatalf("address the bridge: %v: %s", err, out)
	}
	ln := listenInNetNS(t, ns, net.JoinHostPort(ip.String(), "8080"))
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = io.WriteString(c, "pong "+line)
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial pod: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "ping\n")
	reply, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || reply != "pong ping\n" {
		t.Fatalf("reply from pod = %q, %v; want \"pong ping\\n\"", reply, err)
	}

	if err := m.Check(ctx, "sb1", ns, pod, nil); err != nil {
		t.Errorf("Check: %v", err)
	}
	if ids, err := m.Attachments(); err != nil || !slices.Equal(ids, []string{"sb1"}) {
		t.Errorf("Attachments = %v, %v; want [sb1]", ids, err)
	}

	if err := m.Del(ctx, "sb1", ns, pod, nil); err != nil {
		t.Fatalf("Del: %v", err)
	}
	if err := m.Del(ctx, "sb1", ns, pod, nil); err != nil {
		t.Fatalf("second Del: %v", err)
	}
	if tn.ipReserved(tn.name, ip) {
		t.Errorf("host-local still holds %s after Del", ip)
	}
	if out, err := nsenterErr(ns, "ip", "link", "show", "dev", "eth0"); err == nil {
		t.Errorf("eth0 still in the netns after Del: %s", out)
	}
	if ids, err := m.Attachments(); err != nil || len(ids) != 0 {
		t.Errorf("Attachments after Del = %v, %v; want none", ids, err)
	}
	if err := m.Check(ctx, "sb1", ns, pod, nil); !errors.Is(err, ErrNotAttached) {
		t.Errorf("Check after Del = %v, want ErrNotAttached", err)
	}

	if err := RemoveNetNS(ns); err != nil {
		t.Fatalf("RemoveNetNS: %v", err)
	}
	if IsNetNS(ns) {
		t.Error("netns still mounted after RemoveNetNS")
	}
}

func TestDelAfterRestartWithChangedConfig(t *testing.T) {
	tn := newTestNet(t)
	ctx := testCtx(t)
	ns := tn.netns(t, "sb1")
	pod := testPod("db")

	res, err := tn.manager(t).Add(ctx, "sb1", ns, pod, nil)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	ip := res.IPs[0]

	// podvisor restarts; meanwhile the admin replaced the network config with
	// one whose plugin does not even exist, and the pod's netns went away.
	if err := os.Remove(filepath.Join(tn.confDir, "10-test.conflist")); err != nil {
		t.Fatal(err)
	}
	other := `{"cniVersion":"1.0.0","name":"replacement","plugins":[{"type":"no-such-plugin"}]}`
	if err := os.WriteFile(filepath.Join(tn.confDir, "00-new.conflist"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveNetNS(ns); err != nil {
		t.Fatal(err)
	}

	m2 := tn.manager(t)
	if ids, err := m2.Attachments(); err != nil || !slices.Equal(ids, []string{"sb1"}) {
		t.Fatalf("Attachments after restart = %v, %v; want [sb1]", ids, err)
	}
	if err := m2.Del(ctx, "sb1", ns, pod, nil); err != nil {
		t.Fatalf("Del after restart: %v", err)
	}
	if tn.ipReserved(tn.name, ip) {
		t.Errorf("host-local still holds %s after Del", ip)
	}
	if ids, _ := m2.Attachments(); len(ids) != 0 {
		t.Errorf("Attachments after Del = %v, want none", ids)
	}
	if err := m2.Del(ctx, "sb1", "", pod, nil); err != nil {
		t.Errorf("second Del: %v", err)
	}
}

func TestGC(t *testing.T) {
	tn := newTestNet(t)
	m := tn.manager(t)
	ctx := testCtx(t)
	ips := map[string]net.IP{}
	for _, id := range []string{"keep1", "leak1", "leak2"} {
		res, err := m.Add(ctx, id, tn.netns(t, id), testPod(id), nil)
		if err != nil {
			t.Fatalf("Add %s: %v", id, err)
		}
		ips[id] = res.IPs[0]
	}
	// leak2's namespace is gone too, as after a crash and reboot.
	if err := RemoveNetNS(filepath.Join(tn.nsDir, "leak2")); err != nil {
		t.Fatal(err)
	}

	removed, err := m.GC(ctx, map[string]bool{"keep1": true})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{"leak1", "leak2"}) {
		t.Errorf("GC removed %v, want [leak1 leak2]", removed)
	}
	if ids, _ := m.Attachments(); !slices.Equal(ids, []string{"keep1"}) {
		t.Errorf("Attachments after GC = %v, want [keep1]", ids)
	}
	for id, ip := range ips {
		if want := id == "keep1"; tn.ipReserved(tn.name, ip) != want {
			t.Errorf("%s: host-local reservation of %s = %v, want %v", id, ip, !want, want)
		}
	}
	if err := m.Check(ctx, "keep1", filepath.Join(tn.nsDir, "keep1"), testPod("keep1"), nil); err != nil {
		t.Errorf("Check of the kept sandbox after GC: %v", err)
	}
	if err := m.Del(ctx, "keep1", filepath.Join(tn.nsDir, "keep1"), testPod("keep1"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestFailedAddCleansUp(t *testing.T) {
	tn := newTestNet(t)
	if missing := prereq.CNIPlugins([]string{pluginDir}, "tuning"); len(missing) > 0 {
		prereq.Missing(t, missing[0])
	}
	// bridge allocates an address, then tuning fails on a sysctl that does
	// not exist: Add must release the address before returning.
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "failing",
  "plugins": [
    {"type": "bridge", "bridge": %q, "ipam": {"type": "host-local", "subnet": %q, "dataDir": %q}},
    {"type": "tuning", "sysctl": {"net.ipv4.conf.eth0.no_such_sysctl": "1"}}
  ]
}`, tn.bridge, tn.subnet.String(), tn.dataDir)
	if err := os.WriteFile(filepath.Join(tn.confDir, "00-failing.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	m := tn.manager(t)
	ctx := testCtx(t)
	ns := tn.netns(t, "sb1")
	if _, err := m.Add(ctx, "sb1", ns, testPod("x"), nil); err == nil {
		t.Fatal("Add succeeded with a failing plugin")
	}
	entries, err := os.ReadDir(filepath.Join(tn.dataDir, "failing"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			t.Errorf("address %s still reserved after failed Add", e.Name())
		}
	}
	if ids, _ := m.Attachments(); len(ids) != 0 {
		t.Errorf("Attachments after failed Add = %v, want none", ids)
	}
	if out, err := nsenterErr(ns, "ip", "link", "show", "dev", "eth0"); err == nil {
		t.Errorf("eth0 left in the netns after failed Add: %s", out)
	}
}

func nsenter(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := nsenterErr(ns, args...)
	if err != nil {
		t.Fatalf("nsenter %v: %v: %s", args, err, out)
	}
	return out
}

func nsenterErr(ns string, args ...string) (string, error) {
	out, err := exec.Command("nsenter", append([]string{"--net=" + ns}, args...)...).CombinedOutput()
	return string(out), err
}

// listenInNetNS opens a TCP listener inside the namespace at ns. A socket
// belongs to the namespace of the thread that created it, so the listener
// is created on a locked thread that joined ns; that thread is never
// unlocked and dies with its goroutine.
func listenInNetNS(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(ns)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- result{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listen in netns: %v", r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}

func inode(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
