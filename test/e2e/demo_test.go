package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/prereq"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// What the demo owns (Makefile: DEMO_DIR, DEMO_RUN, DEMO_NS, the built-in
// network). No other test uses any of these names: theirs are temp dirs,
// e2e-* namespaces and pvt* bridges on 10.222.0.0/16.
const (
	demoDir    = "/var/lib/podvisor-demo"
	demoRun    = "/run/podvisor-demo"
	demoNS     = "podvisor-demo"
	demoBridge = "podvisor0"
)

var demoCIDR = &net.IPNet{IP: net.IPv4(10, 88, 0, 0).To4(), Mask: net.CIDRMask(16, 32)}

// TestDemoMakeAndClean runs `make demo` as a newcomer would, fetches the web
// page from the address it prints, checks that `make demo-clean` refuses at
// once while the demo runs, stops the demo with Ctrl-C (SIGINT to its
// process group), runs `make demo-clean`, and checks that nothing of the
// demo is left: bridge, address, route, cgroup, mount, process, run and
// state dirs.
func TestDemoMakeAndClean(t *testing.T) {
	t.Parallel()
	requireEnv(t)
	if _, err := exec.LookPath("make"); err != nil {
		prereq.Missing(t, "make in PATH (the demo test runs make demo)")
	}
	if reason := demoInUse(); reason != "" {
		prereq.Missing(t, "a machine where the demo can run: "+reason)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The podvisor the other tests run (and the log driver beside it), so
	// that the demo does not build its own; the Debian containerd or the
	// one PODVISOR_TEST_CONTAINERD names.
	vars := []string{"DEMO_BIN=" + filepath.Dir(podvisorBin), "DEMO_CONTAINERD=" + env.Containerd}

	demo := startMake(t, root, append([]string{"demo"}, vars...)...)
	t.Cleanup(func() {
		// A failed test must not leave the demo behind either.
		if demo.running() {
			demo.signal(syscall.SIGINT)
			if !demo.wait(30 * time.Second) {
				demo.signal(syscall.SIGKILL)
				demo.wait(10 * time.Second)
			}
		}
		if t.Failed() {
			t.Logf("make demo said:\n%s", demo.output())
			out, _ := runMake(root, 5*time.Minute, append([]string{"demo-clean"}, vars...)...)
			t.Logf("make demo-clean after the failure said:\n%s", out)
		}
	})

	line := demo.waitLine(t, regexp.MustCompile(`^==> the web pod runs: curl http://([0-9.]+)/$`), 5*time.Minute)
	ip := net.ParseIP(line[1])
	if ip == nil || !demoCIDR.Contains(ip) {
		t.Fatalf("make demo printed address %q, not one of the built-in network %s", line[1], demoCIDR)
	}
	// The address is the one podvisor gave the web pod, not a guess.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	pod, err := api.NewClient(filepath.Join(demoRun, "podvisor.sock")).Pod(ctx, "web")
	cancel()
	if err != nil {
		t.Fatalf("the demo's API: %v", err)
	}
	if pod.Status.PodIP != ip.String() || pod.Status.Phase != v1.PodRunning {
		t.Fatalf("make demo printed %s; podvisor says the web pod is %s at %q", ip, pod.Status.Phase, pod.Status.PodIP)
	}
	// A newcomer's first look: podvisor starts on examples/ (manifests
	// beside docs, tests and the image dir) without a warning or an error
	// (but for those about the host: its resolv.conf, and a host without
	// a system bus, such as this test's container, where logind cannot
	// delay a shutdown).
	hostWarnings := []string{"dropped loopback nameserver", "graceful node shutdown is off until logind answers"}
	for _, l := range strings.Split(demo.output(), "\n") {
		if (strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR")) && !slices.ContainsFunc(hostWarnings, func(w string) bool { return strings.Contains(l, w) }) {
			t.Errorf("make demo logged: %s", l)
		}
	}
	body := fetch(t, "http://"+ip.String()+"/", 30*time.Second)
	if want := "hello from " + pod.Name; strings.TrimSpace(body) != want {
		t.Errorf("the web pod answers %q, want %q", body, want)
	}

	// demo-clean while the demo runs: refused at once, naming the pid.
	lock, _ := os.ReadFile(filepath.Join(demoDir, "state", "podvisor.lock"))
	pid := strings.TrimSpace(string(lock))
	began := time.Now()
	out, err := runMake(root, time.Minute, append([]string{"demo-clean"}, vars...)...)
	if err == nil {
		t.Fatalf("make demo-clean succeeded while the demo runs:\n%s", out)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("make demo-clean took %s to refuse, want at once", took.Round(time.Millisecond))
	}
	for _, want := range []string{"the demo is running (podvisor pid " + pid + ",", "kill -INT " + pid} {
		if pid == "" || !strings.Contains(out, want) {
			t.Errorf("make demo-clean's refusal lacks %q:\n%s", want, out)
		}
	}
	if !demo.running() {
		t.Fatalf("the refused make demo-clean stopped the demo:\n%s", demo.output())
	}
	if _, err := os.Stat(demoRun); err != nil {
		t.Fatalf("the refused make demo-clean removed something: %v", err)
	}

	// Ctrl-C: make, its shell and podvisor get SIGINT; the pods keep
	// running.
	demo.signal(syscall.SIGINT)
	if !demo.wait(60 * time.Second) {
		t.Fatalf("make demo did not exit within 60s of SIGINT:\n%s", demo.output())
	}
	if leftovers := demoLeftovers(); len(leftovers) == 0 {
		t.Fatal("nothing of the demo runs after Ctrl-C: the check below would prove nothing")
	}

	out, err = runMake(root, 5*time.Minute, append([]string{"demo-clean"}, vars...)...)
	if err != nil {
		t.Fatalf("make demo-clean: %v\n%s", err, out)
	}
	// What demo-clean waited for is done when it returns; the kernel may
	// still be tearing down a namespace or a cgroup a moment later.
	deadline := time.Now().Add(10 * time.Second)
	left := demoLeftovers()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
		left = demoLeftovers()
	}
	if len(left) > 0 {
		t.Errorf("after make demo-clean, left of the demo:\n  %s\nmake demo-clean said:\n%s", strings.Join(left, "\n  "), out)
	}
}

// demoInUse says why the demo test cannot run here: a demo (or a podvisor
// on the built-in network) already runs, or "" when none does.
func demoInUse() string {
	lock := filepath.Join(demoDir, "state", "podvisor.lock")
	if f, err := os.Open(lock); err == nil {
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			return "a demo is already running on this machine (" + lock + " is locked)"
		}
	}
	if _, err := net.InterfaceByName(demoBridge); err == nil {
		return "the bridge " + demoBridge + " exists: a podvisor on the built-in network, or an earlier demo not cleaned (make demo-clean), uses it"
	}
	return ""
}

// demoLeftovers lists what of the demo exists: the bridge, addresses and
// routes of its network, cgroups, mounts, processes and directories.
func demoLeftovers() []string {
	var left []string
	if _, err := net.InterfaceByName(demoBridge); err == nil {
		left = append(left, "link "+demoBridge)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && demoCIDR.Contains(ipn.IP) {
				left = append(left, "address "+ipn.String())
			}
		}
	}
	left = append(left, demoRoutes()...)
	for _, pattern := range []string{"/sys/fs/cgroup/" + demoNS + "*", "/sys/fs/cgroup/*/" + demoNS + "*"} {
		cgs, _ := filepath.Glob(pattern)
		for _, cg := range cgs {
			if base := filepath.Base(cg); base == demoNS || base == demoNS+"-containerd" {
				left = append(left, "cgroup "+cg)
			}
		}
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(mi), "\n") {
			f := strings.Fields(l)
			if len(f) > 4 && (underDemo(f[4]) || underDemo(f[3])) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmd, err := os.ReadFile(p)
		if err != nil || filepath.Dir(p) == fmt.Sprintf("/proc/%d", os.Getpid()) {
			continue
		}
		s := string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		if strings.Contains(s, demoRun+"/") || strings.Contains(s, demoDir+"/") || strings.Contains(s, "-namespace "+demoNS+" ") {
			left = append(left, "process "+filepath.Base(filepath.Dir(p))+": "+s)
		}
	}
	for _, d := range []string{demoDir, demoRun} {
		if _, err := os.Lstat(d); err == nil {
			left = append(left, "directory "+d)
		}
	}
	return left
}

func underDemo(path string) bool {
	for _, d := range []string{demoDir, demoRun} {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// demoRoutes lists the IPv4 routes into the demo's network
// (/proc/net/route: destination and mask as little-endian hex).
func demoRoutes() []string {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return []string{"read /proc/net/route: " + err.Error()}
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 8 {
			continue
		}
		dst, mask := leIPv4(f[1]), leIPv4(f[7])
		if dst == nil || mask == nil {
			continue
		}
		ones, _ := net.IPMask(mask).Size()
		if ones >= 16 && demoCIDR.Contains(dst) {
			out = append(out, fmt.Sprintf("route %s/%d dev %s", dst, ones, f[0]))
		}
	}
	return out
}

func leIPv4(h string) net.IP {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 4 {
		return nil
	}
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, binary.LittleEndian.Uint32(b))
	return ip
}

// fetch GETs url until it answers 200 or timeout passes.
func fetch(t *testing.T, url string, timeout time.Duration) string {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := c.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(b)
			}
			err = fmt.Errorf("status %d: %q", resp.StatusCode, b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
	}
}

// runMake runs make in dir with a bound and returns its combined output.
func runMake(dir string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("make %s: still running after %s", strings.Join(args, " "), timeout)
	}
	return string(out), err
}

// makeRun is a make running in its own process group, as in a terminal,
// its output collected line by line.
type makeRun struct {
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	out    strings.Builder
	lines  chan string
}

func startMake(t *testing.T, dir string, args ...string) *makeRun {
	t.Helper()
	m := &makeRun{exited: make(chan struct{}), lines: make(chan string, 1024)}
	m.cmd = exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	m.cmd.Dir = dir
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w := io.Pipe()
	m.cmd.Stdout, m.cmd.Stderr = w, w
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			m.mu.Lock()
			m.out.WriteString(sc.Text() + "\n")
			m.mu.Unlock()
			select {
			case m.lines <- sc.Text():
			default: // nobody waits for lines any more
			}
		}
		io.Copy(io.Discard, r)
	}()
	go func() { m.cmd.Wait(); w.Close(); close(m.exited) }()
	return m
}

func (m *makeRun) output() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.String()
}

func (m *makeRun) running() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to make's whole process group, as a terminal does.
func (m *makeRun) signal(sig syscall.Signal) { syscall.Kill(-m.cmd.Process.Pid, sig) }

func (m *makeRun) wait(timeout time.Duration) bool {
	select {
	case <-m.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// waitLine waits for a line of output matching re and returns its
// submatches.
func (m *makeRun) waitLine(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-m.lines:
			if sub := re.FindStringSubmatch(l); sub != nil {
				return sub
			}
		case <-m.exited:
			// Lines printed just before the exit are still queued.
			for {
				select {
				case l := <-m.lines:
					if sub := re.FindStringSubmatch(l); sub != nil {
						return sub
					}
				default:
					t.Fatalf("make exited (%v) before printing a line matching %s:\n%s", m.cmd.ProcessState, re, m.output())
				}
			}
		case <-deadline:
			t.Fatalf("no line matching %s within %s:\n%s", re, timeout, m.output())
		}
	}
}

// TestExampleWebStopsOnSIGTERM: the example web server (examples/web.yaml,
// as make demo runs it) stops on SIGTERM, well inside its grace period,
// instead of ignoring it as PID 1 until the SIGKILL at the end. A liveness
// probe that always fails makes podvisor stop it the way kubelet does:
// SIGTERM, then SIGKILL after terminationGracePeriodSeconds.
func TestExampleWebStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile("../../examples/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const port = "    - containerPort: 80\n"
	if !bytes.Contains(example, []byte(port)) {
		t.Fatalf("examples/web.yaml has no %q to put the probe after", port)
	}
	grace := regexp.MustCompile(`(?m)^  terminationGracePeriodSeconds: (\d+)$`).FindSubmatch(example)
	if grace == nil {
		t.Fatal("examples/web.yaml sets no terminationGracePeriodSeconds")
	}
	manifest := strings.Replace(string(example), port, port+`    livenessProbe:
      exec: {command: ["false"]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
`, 1)
	d := newDaemon(t)
	d.start()
	d.writeManifest("web.yaml", manifest)
	name := "web-" + node
	p := d.waitPod(name, 2*time.Minute, "httpd killed by its liveness probe once", func(p *v1.Pod) bool {
		return containerStatus(p, "httpd").LastTerminationState.Terminated != nil
	})
	term := containerStatus(p, "httpd").LastTerminationState.Terminated
	switch {
	case term.ExitCode == 137:
		t.Errorf("httpd ended with exit code 137 (%s): it ignored SIGTERM until the SIGKILL at the end of its grace period", term.Reason)
	case term.ExitCode != 0:
		t.Errorf("httpd ended with exit code %d (%s), want 0: the example's shell exits 0 on SIGTERM", term.ExitCode, term.Reason)
	}
	var killing time.Time
	for _, e := range d.podEvents(name) {
		if e.Reason == "Killing" && strings.Contains(e.InvolvedObject.FieldPath, "httpd") && (killing.IsZero() || e.FirstTimestamp.Time.Before(killing)) {
			killing = e.FirstTimestamp.Time
		}
	}
	if killing.IsZero() {
		t.Fatalf("no Killing event for httpd: %v", d.podEvents(name))
	}
	// Both times have a resolution of one second.
	graceSeconds, _ := strconv.Atoi(string(grace[1]))
	if took, limit := term.FinishedAt.Sub(killing), time.Duration(graceSeconds-2)*time.Second; took > limit {
		t.Errorf("httpd took %s from the Killing event to its exit, want well inside its grace period of %ss (at most %s)", took, grace[1], limit)
	}
}
