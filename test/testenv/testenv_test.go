package testenv

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/internal/embedded"
	"github.com/podvisor/podvisor/test/syncbuf"
)

// newHostNetContainer creates a container running args from the env image
// in the host network namespace.
func newHostNetContainer(ctx context.Context, t *testing.T, c *client.Client, img client.Image, id string, args ...string) client.Container {
	t.Helper()
	ctr, err := c.NewContainer(ctx, id,
		client.WithNewSnapshot(id+"-rootfs", img),
		client.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs(args...),
			oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostHostsFile, oci.WithHostResolvconf))
	if err != nil {
		t.Fatalf("new container %s: %v", id, err)
	}
	return ctr
}

// pollUntil calls cond until it returns true or timeout passes.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processAlive(pid int) bool {
	return len(aliveOf(map[int]bool{pid: true})) > 0
}

func TestEnv(t *testing.T) {
	RequireRoot(t)
	e, err := Start("")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	e.Logf = t.Logf
	stopped := false
	defer func() {
		if !stopped {
			if err := e.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	t.Run("config", func(t *testing.T) {
		if !strings.HasPrefix(e.Namespace, DefaultNamespace+"-") {
			t.Errorf("namespace %q", e.Namespace)
		}
		if len(e.Bridge) > 15 || !strings.HasPrefix(e.Bridge, "pvt") {
			t.Errorf("bridge name %q", e.Bridge)
		}
		_, pool, _ := net.ParseCIDR("10.222.0.0/16")
		if ones, _ := e.Subnet.Mask.Size(); ones != 24 || !pool.Contains(e.Subnet.IP) {
			t.Errorf("subnet %v not a /24 of %v", e.Subnet, pool)
		}
		confs, _ := filepath.Glob(filepath.Join(e.CNIConfDir, "*.conflist"))
		if len(confs) != 1 {
			t.Fatalf("conflists in %s: %v", e.CNIConfDir, confs)
		}
		data, err := os.ReadFile(confs[0])
		if err != nil {
			t.Fatal(err)
		}
		var conf struct {
			CNIVersion string `json:"cniVersion"`
			Name       string
			Plugins    []map[string]any
		}
		if err := json.Unmarshal(data, &conf); err != nil {
			t.Fatalf("conflist: %v", err)
		}
		if conf.CNIVersion != "1.0.0" || conf.Name != e.NetName || len(conf.Plugins) != 2 {
			t.Fatalf("conflist = %s", data)
		}
		br := conf.Plugins[0]
		if br["type"] != "bridge" || br["bridge"] != e.Bridge || br["ipMasq"] != false || br["isGateway"] != true || br["hairpinMode"] != true {
			t.Errorf("bridge plugin = %v", br)
		}
		if strings.Contains(string(data), "routes") || !strings.Contains(string(data), e.Subnet.String()) {
			t.Errorf("ipam must use %s and set no routes: %s", e.Subnet, data)
		}
		if conf.Plugins[1]["type"] != "portmap" {
			t.Errorf("second plugin = %v", conf.Plugins[1])
		}
		for _, d := range strings.Split(e.CNIBinDir, ":") {
			if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
				return
			}
		}
		t.Errorf("no bridge plugin in CNIBinDir %q", e.CNIBinDir)
	})

	c, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	img, err := e.ImportImage(ctx, c)
	if err != nil {
		t.Fatalf("ImportImage: %v", err)
	}

	// echo hi, with host networking, exits 0.
	ctr := newHostNetContainer(ctx, t, c, img, "echo", "echo", "hi")
	var out syncbuf.Buffer
	task, err := ctr.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, &out, &out)))
	if err != nil {
		t.Fatalf("new task: %v", err)
	}
	statusC, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatalf("start task: %v", err)
	}
	st := <-statusC
	if code, _, err := st.Result(); err != nil || code != 0 {
		t.Fatalf("echo exited %d, %v", code, err)
	}
	if _, err := task.Delete(ctx); err != nil { // also drains the IO
		t.Fatalf("delete task: %v", err)
	}
	if got := out.String(); got != "hi\n" {
		t.Errorf("echo output %q, want %q", got, "hi\n")
	}

	// The image's probetarget runs (static) and answers on loopback; it
	// exits 0 on SIGTERM as the container's pid 1.
	target := newHostNetContainer(ctx, t, c, img, "probetarget", ProbeTargetPath,
		"-addr", "127.0.0.1", "-http", "0", "-https", "-1", "-tcp", "-1", "-grpc", "-1")
	var tout syncbuf.Buffer
	ttask, err := target.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, &tout, &tout)))
	if err != nil {
		t.Fatalf("new task: %v", err)
	}
	tstatus, err := ttask.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ttask.Start(ctx); err != nil {
		t.Fatalf("start probetarget: %v", err)
	}
	var addr string
	pollUntil(t, 10*time.Second, "probetarget's listening line", func() bool {
		line, _, _ := strings.Cut(tout.String(), "\n")
		var ok bool
		addr, ok = strings.CutPrefix(line, "probetarget: listening http=")
		return ok && strings.HasSuffix(tout.String(), "\n")
	})
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET probetarget: %v (output %q)", err, tout.String())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("probetarget answered %d", resp.StatusCode)
	}
	if err := ttask.Kill(ctx, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-tstatus:
		if code, _, err := st.Result(); err != nil || code != 0 {
			t.Errorf("probetarget exited %d, %v after SIGTERM, want 0", code, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("probetarget did not exit on SIGTERM")
	}
	if _, err := ttask.Delete(ctx); err != nil {
		t.Fatalf("delete task: %v", err)
	}

	// A long task survives Restart and is still ours afterwards.
	sleeper := newHostNetContainer(ctx, t, c, img, "sleeper", "sleep", "1000")
	stask, err := sleeper.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatalf("new task: %v", err)
	}
	if err := stask.Start(ctx); err != nil {
		t.Fatalf("start sleeper: %v", err)
	}
	sleepPid := int(stask.Pid())
	c.Close()

	if err := e.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	c2, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	sleeper, err = c2.LoadContainer(ctx, "sleeper")
	if err != nil {
		t.Fatalf("load container after restart: %v", err)
	}
	stask, err = sleeper.Task(ctx, nil)
	if err != nil {
		t.Fatalf("task after restart: %v", err)
	}
	if s, err := stask.Status(ctx); err != nil || s.Status != client.Running || int(stask.Pid()) != sleepPid {
		t.Fatalf("after restart: status %v (%v), pid %d, want running pid %d", s.Status, err, stask.Pid(), sleepPid)
	}
	c2.Close()

	// A stray process naming a path in Dir, with a child, and a bridge
	// as CNI would leave it: Stop must remove them all.
	stray := exec.Command("/bin/busybox", "sh", "-c", "sleep 1000 & wait", filepath.Join(e.Dir, "marker"))
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	defer stray.Wait()
	var strayChild int
	pollUntil(t, 5*time.Second, "stray child", func() bool {
		for pid, p := range listProcs() {
			if p.ppid == stray.Process.Pid && slices.Contains(p.args, "1000") {
				strayChild = pid
				return true
			}
		}
		return false
	})
	if out, err := exec.Command("ip", "link", "add", "name", e.Bridge, "type", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("add bridge: %v: %s", err, out)
	}

	dir := e.Dir
	stopped = true
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Dir %s still exists: %v", dir, err)
	}
	for _, pid := range []int{sleepPid, stray.Process.Pid, strayChild} {
		if processAlive(pid) {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
	for pid, p := range listProcs() {
		if p.state != 'Z' && namesPathUnder(p.args, dir) {
			t.Errorf("pid %d still names %s: %v", pid, dir, p.args)
		}
	}
	if _, err := net.InterfaceByName(e.Bridge); err == nil {
		t.Errorf("bridge %s still exists", e.Bridge)
	}
	if mps, _ := mountsUnder(dir); len(mps) > 0 {
		t.Errorf("mounts left under %s: %v", dir, mps)
	}
	leftovers, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", e.Namespace))
	for _, p := range append(leftovers, filepath.Join("/sys/fs/cgroup", e.Namespace), filepath.Join("/run/containerd/runc", e.Namespace)) {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
	if err := e.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartFailureReportsLog(t *testing.T) {
	RequireRoot(t)
	dir := t.TempDir()
	// A directory where containerd wants its socket file makes it fail.
	bad := filepath.Join(dir, "env")
	if err := os.MkdirAll(filepath.Join(bad, "containerd.sock", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := Start(bad)
	if err == nil {
		e.Stop()
		t.Fatal("Start succeeded with a directory in place of the socket")
	}
	if !strings.Contains(err.Error(), "containerd log") {
		t.Errorf("error lacks the daemon log: %v", err)
	}
	if _, serr := os.Stat(bad); !os.IsNotExist(serr) {
		t.Errorf("failed Start left %s", bad)
	}
}

func TestNamesPathUnder(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"containerd-shim-runc-v2", "-namespace", "x", "-address", "/tmp/pvt-1/containerd.sock"}, true},
		{[]string{"shim", "--address=/tmp/pvt-1/containerd.sock"}, true},
		{[]string{"sh", "/tmp/pvt-1"}, true},
		{[]string{"sh", "/tmp/pvt-10/containerd.sock"}, false},
		{[]string{"sh", "/tmp/pvt"}, false},
		{[]string{""}, false},
	}
	for _, tc := range tests {
		if got := namesPathUnder(tc.args, "/tmp/pvt-1"); got != tc.want {
			t.Errorf("namesPathUnder(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestSubnetHelpers(t *testing.T) {
	ip, err := procIPv4("0001A8C0") // 192.168.1.0 as /proc/net/route writes it
	if err != nil || !ip.Equal(net.IPv4(192, 168, 1, 0)) {
		t.Errorf("procIPv4 = %v, %v", ip, err)
	}
	mk := func(s string) *net.IPNet { _, n, _ := net.ParseCIDR(s); return n }
	tests := []struct {
		nets []*net.IPNet
		want bool
	}{
		{[]*net.IPNet{mk("10.0.0.0/8")}, true},
		{[]*net.IPNet{mk("10.222.7.128/25")}, true},
		{[]*net.IPNet{{IP: net.ParseIP("10.222.7.1"), Mask: net.CIDRMask(24, 32)}}, true},
		{[]*net.IPNet{mk("10.222.8.0/24"), mk("192.168.0.0/16")}, false},
		{nil, false},
	}
	for _, tc := range tests {
		if got := overlapsAny(mk("10.222.7.0/24"), tc.nets); got != tc.want {
			t.Errorf("overlapsAny(10.222.7.0/24, %v) = %v, want %v", tc.nets, got, tc.want)
		}
	}
}

func TestPickSubnetExclusive(t *testing.T) {
	// Every held reservation must differ; 20 at once stays fast.
	seen := map[string]bool{}
	for range 20 {
		n, f, err := pickSubnet()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if seen[n.String()] {
			t.Fatalf("subnet %v handed out twice", n)
		}
		seen[n.String()] = true
	}
}

func TestContainerdConfig(t *testing.T) {
	e := &Env{Dir: "/d", Root: "/d/root", State: "/d/state", Address: "/d/containerd.sock"}
	tests := []struct {
		major    int
		want     []string
		notWant  []string
		versions string
	}{
		{1, []string{`"io.containerd.grpc.v1.cri"`, `root = "/d/root"`, `address = "/d/containerd.sock"`, `path = "/d/opt"`}, []string{"io.containerd.cri.v1.images"}, "1.6.20~ds1"},
		{2, []string{`"io.containerd.grpc.v1.cri"`, `"io.containerd.cri.v1.images"`, `"io.containerd.cri.v1.runtime"`, "version = 2"}, nil, "v2.1.4"},
	}
	for _, tc := range tests {
		if got := embedded.Major(tc.versions); got != tc.major {
			t.Errorf("Major(%q) = %d, want %d", tc.versions, got, tc.major)
		}
		cfg := containerdConfig(e, tc.major)
		for _, w := range tc.want {
			if !strings.Contains(cfg, w) {
				t.Errorf("config for %d.x lacks %s:\n%s", tc.major, w, cfg)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(cfg, w) {
				t.Errorf("config for %d.x has %s:\n%s", tc.major, w, cfg)
			}
		}
	}
}
