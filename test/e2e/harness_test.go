package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/mounts"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/test/prereq"
	"github.com/podvisor/podvisor/test/testenv"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

const node = "e2e"

var (
	env         *testenv.Env
	podvisorBin string
	binDir      string // where the run builds its binaries; removed at its end
	missingEnv  string // what the machine lacks for the tests, when it does
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	offline()
	if missing := testenv.Missing(); len(missing) > 0 {
		// make test: the list, and the binary fails; go test: every test skips.
		prereq.Exit(os.Stderr, missing)
		missingEnv = strings.Join(missing, ", ")
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "pv-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// PODVISOR_E2E_BINARY runs a given build, e.g. one made with -race.
	podvisorBin = os.Getenv("PODVISOR_E2E_BINARY")
	if podvisorBin == "" {
		podvisorBin = filepath.Join(dir, "podvisor")
		build := exec.Command("go", "build", "-o", podvisorBin, "github.com/podvisor/podvisor/cmd/podvisor")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build podvisor: %v\n%s", err, out)
			return 1
		}
		// The log driver beside it, as `make build` installs them.
		build = exec.Command("go", "build", "-o", filepath.Join(dir, "podvisor-log-driver"), "github.com/podvisor/podvisor/cmd/podvisor-log-driver")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build podvisor-log-driver: %v\n%s", err, out)
			return 1
		}
	}
	env, err = testenv.Start("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "start test environment:", err)
		return 1
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop test environment:", err)
	}
	return code
}

func requireEnv(t *testing.T) {
	t.Helper()
	if env == nil {
		prereq.Missing(t, missingEnv)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// daemon is one podvisor under test with its own directories and
// containerd namespace.
type daemon struct {
	t                                       *testing.T
	dir                                     string
	manifests, state, run, logs, images, ns string
	sock                                    string
	logFile                                 string
	cmd                                     *exec.Cmd
	exited                                  chan error
	extraArgs                               []string
	// env is added to podvisor's environment (e.g. a private
	// DBUS_SYSTEM_BUS_ADDRESS).
	env []string
	// baseIPs are the test network's allocations before this daemon:
	// cleanup reports only those beyond them.
	baseIPs []string
}

func newDaemon(t *testing.T, extra ...string) *daemon {
	t.Helper()
	requireEnv(t)
	dir, err := os.MkdirTemp("", "pv-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{
		t:         t,
		dir:       dir,
		manifests: filepath.Join(dir, "manifests"),
		state:     filepath.Join(dir, "state"),
		run:       filepath.Join(dir, "run"),
		logs:      filepath.Join(dir, "logs"),
		images:    filepath.Join(dir, "images"),
		ns:        "e2e-" + randHex(4),
		logFile:   filepath.Join(dir, "podvisor.log"),
		extraArgs: extra,
	}
	d.sock = filepath.Join(d.run, "podvisor.sock")
	for _, p := range []string{d.manifests, d.images} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(env.ImageArchive, filepath.Join(d.images, "busybox.tar")); err != nil {
		t.Fatal(err)
	}
	d.baseIPs = allocatedIPs(t)
	t.Cleanup(d.cleanup)
	return d
}

func (d *daemon) args() []string {
	a := []string{"run",
		"--manifests", d.manifests,
		"--state-dir", d.state,
		"--run-dir", d.run,
		"--log-dir", d.logs,
		"--images-dir", d.images,
		// Never the host's /var/lib/kubelet/pki.
		"--cert-dir", filepath.Join(d.dir, "pki"),
		"--containerd-address", env.Address,
		"--containerd-namespace", d.ns,
		"--cni-conf-dir", env.CNIConfDir,
		"--cni-bin-dir", env.CNIBinDir,
		"--node-name", node,
		"--node-ip", "127.0.0.1",
		// Safety-net relists far beyond any test's deadline: whatever a
		// test sees happen was driven by events and inotify.
		"--relist-period", "1h",
		"--manifest-relist-period", "1h",
		"--log-level", "debug",
		// The host's own disk and memory must not evict the tests' pods
		// (a CI runner's disk is often more than 85% full, kubelet's
		// imagefs.available default); the pressure tests set their own.
		"--eviction-hard", "none",
	}
	return append(a, d.extraArgs...)
}

// start runs podvisor in its own process group and waits until its API
// answers.
func (d *daemon) start() {
	d.t.Helper()
	logf, err := os.OpenFile(d.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	d.cmd = exec.Command(podvisorBin, d.args()...)
	// No test podvisor reaches the host's system bus (its logind): a test
	// that wants one gives its private bus in env.
	d.cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS=unix:path="+filepath.Join(d.dir, "no-system-bus"))
	d.cmd.Env = append(d.cmd.Env, d.env...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	logf.Close()
	d.exited = make(chan error, 1)
	cmd := d.cmd
	go func() { d.exited <- cmd.Wait() }()
	c := api.NewClient(d.sock)
	d.poll("podvisor API to answer", 30*time.Second, func() (bool, string) {
		select {
		case err := <-d.exited:
			d.exited <- err
			return false, fmt.Sprintf("podvisor exited: %v", err)
		default:
		}
		err := c.Healthz(context.Background())
		return err == nil, fmt.Sprint(err)
	})
}

// stop sends sig to podvisor and waits for it to exit.
func (d *daemon) stop(sig syscall.Signal) {
	d.t.Helper()
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(sig)
	d.waitExit()
}

// killGroup kills podvisor's whole process group with SIGKILL.
func (d *daemon) killGroup() {
	d.t.Helper()
	if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		d.t.Fatal(err)
	}
	d.waitExit()
}

func (d *daemon) waitExit() {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.t.Fatalf("podvisor did not exit\n%s", d.logTail())
	}
	d.cmd = nil
}

// Clean-up deadlines: podvisor's removal of every pod, its exit on
// SIGTERM, and what containerd finishes after it (snapshots, leases).
const (
	cleanupPodsTimeout = 60 * time.Second
	cleanupExitTimeout = 20 * time.Second
	cleanupGCTimeout   = 10 * time.Second
)

// cleanup, when podvisor is still running, removes every manifest and lets
// podvisor stop and clean up its pods (the real path), then stops it; the
// test fails, naming what remained, when that path leaves anything behind.
// Then, in any case, it removes what is left (a test that stopped or
// killed podvisor leaves its pods running on purpose).
func (d *daemon) cleanup() {
	if d.cmd != nil {
		d.cleanupThroughPodvisor()
	}
	// Anything left: remove containers and mounts.
	ctx := context.Background()
	if cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns)); err == nil {
		ctrs, _ := cl.Containers(ctx)
		for _, c := range ctrs {
			if task, err := c.Task(ctx, nil); err == nil {
				task.Delete(ctx, containerd.WithProcessKill)
			}
			c.Delete(ctx, containerd.WithSnapshotCleanup)
		}
		cl.Close()
	}
	for _, m := range mountsUnder(d.dir) {
		unix.Unmount(m, unix.MNT_DETACH)
	}
	// podvisor's cgroup parent for this namespace, in every hierarchy
	// (empty once its pods are gone).
	parents, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", d.ns))
	if p := filepath.Join("/sys/fs/cgroup", d.ns); dirExists(p) {
		parents = append(parents, p)
	}
	for _, p := range parents {
		cgroupfs.RemoveTree(p)
	}
	if b, _ := os.ReadFile(d.logFile); bytes.Contains(b, []byte("DATA RACE")) || bytes.Contains(b, []byte("panic:")) {
		d.t.Errorf("podvisor reported a data race or panicked:\n%s", b)
	} else if d.t.Failed() {
		d.t.Logf("podvisor log:\n%s", d.logTail())
	}
	os.RemoveAll(d.dir)
}

// cleanupThroughPodvisor is cleanup's real path; each thing that does not
// happen in time fails the test.
func (d *daemon) cleanupThroughPodvisor() {
	t := d.t
	// The sandboxes this daemon runs now: tests run in parallel on one
	// network, so an address is this daemon's leak only if one of its
	// sandboxes holds it.
	own := d.sandboxIDs()
	entries, _ := os.ReadDir(d.manifests)
	for _, e := range entries {
		os.Remove(filepath.Join(d.manifests, e.Name()))
	}
	deadline := time.Now().Add(cleanupPodsTimeout)
	for {
		names, err := statusPods(d)
		if err == nil && len(names) == 0 {
			break
		}
		exited := false
		select {
		case exit := <-d.exited:
			d.exited <- exit // for the wait below
			t.Errorf("cleanup: podvisor exited (%v) before removing its pods (%v, %v)", exit, names, err)
			exited = true
		default:
		}
		if exited {
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Errorf("cleanup: podvisor's API still fails %s after every manifest was removed: %v", cleanupPodsTimeout, err)
			} else {
				t.Errorf("cleanup: %d pods still listed %s after every manifest was removed: %v", len(names), cleanupPodsTimeout, names)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(cleanupExitTimeout):
		t.Errorf("cleanup: podvisor did not exit within %s of SIGTERM; killed", cleanupExitTimeout)
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
	d.cmd = nil

	// What podvisor left: containerd finishes some removals after it
	// (snapshots, leases), so poll a little.
	deadline = time.Now().Add(cleanupGCTimeout)
	for {
		inv, err := d.inventory(d.baseIPs)
		inv.IPs = slices.DeleteFunc(inv.IPs, func(ip string) bool { _, id, _ := strings.Cut(ip, " of "); return !own[id] })
		left := inv.nonEmpty()
		if err != nil {
			left = append(left, "(inventory incomplete: "+err.Error()+")")
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("cleanup: left after podvisor stopped:\n  %s", strings.Join(left, "\n  "))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mountsUnder(dir string) []string {
	ms, _ := mounts.Under(dir)
	return ms
}

func (d *daemon) logTail() string { return testenv.Tail(d.logFile, 80) }

// writeManifest installs a manifest the atomic way: written beside the
// directory, then renamed into it.
func (d *daemon) writeManifest(name, content string) {
	d.t.Helper()
	tmp := filepath.Join(d.dir, "."+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.manifests, name)); err != nil {
		d.t.Fatal(err)
	}
}

func (d *daemon) removeManifest(name string) {
	d.t.Helper()
	if err := os.Remove(filepath.Join(d.manifests, name)); err != nil {
		d.t.Fatal(err)
	}
}

// poll calls cond until it reports true or timeout passes; then the test
// fails with cond's last message and podvisor's log.
func (d *daemon) poll(what string, timeout time.Duration, cond func() (bool, string)) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	var msg string
	for {
		var ok bool
		ok, msg = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *daemon) pod(name string) (*v1.Pod, error) {
	return api.NewClient(d.sock).Pod(context.Background(), name)
}

// waitPod polls the API until pod name satisfies cond.
func (d *daemon) waitPod(name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	d.t.Helper()
	var last *v1.Pod
	d.poll(fmt.Sprintf("pod %s: %s", name, what), timeout, func() (bool, string) {
		p, err := d.pod(name)
		if err != nil {
			return false, err.Error()
		}
		last = p
		if cond(p) {
			return true, ""
		}
		b, _ := json.MarshalIndent(p.Status, "", "  ")
		return false, "last status: " + string(b)
	})
	return last
}

func (d *daemon) waitGone(name string, timeout time.Duration) {
	d.t.Helper()
	d.poll("pod "+name+" to be gone", timeout, func() (bool, string) {
		_, err := d.pod(name)
		if errors.Is(err, api.ErrNotFound) {
			return true, ""
		}
		return false, fmt.Sprintf("still there (%v)", err)
	})
}

func running(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

func containerStatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return v1.ContainerStatus{}
}

func containerID(p *v1.Pod, name string) string {
	return strings.TrimPrefix(containerStatus(p, name).ContainerID, "containerd://")
}

// taskPID returns the pid of a container's task in the daemon's namespace.
func (d *daemon) taskPID(id string) uint32 {
	d.t.Helper()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		d.t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	c, err := cl.LoadContainer(ctx, id)
	if err != nil {
		d.t.Fatalf("load container %s: %v", id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		d.t.Fatalf("task of %s: %v", id, err)
	}
	return task.Pid()
}

// containers lists the containerd containers in the daemon's namespace.
func (d *daemon) containers() []string {
	d.t.Helper()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		d.t.Fatal(err)
	}
	defer cl.Close()
	ctrs, err := cl.Containers(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	var ids []string
	for _, c := range ctrs {
		ids = append(ids, c.ID())
	}
	return ids
}

// allocatedIPs lists the addresses host-local IPAM holds for the test
// network.
func allocatedIPs(t *testing.T) []string {
	t.Helper()
	ips, err := hostLocalIPs()
	if err != nil {
		t.Fatal(err)
	}
	return ips
}

// sandboxIDs lists the sandboxes of the daemon's pod records.
func (d *daemon) sandboxIDs() map[string]bool {
	ids := map[string]bool{}
	l := layout.Layout{StateDir: d.state}
	entries, _ := os.ReadDir(l.Records())
	for _, e := range entries {
		var rec struct {
			Sandbox *struct {
				ID string `json:"id"`
			} `json:"sandbox"`
		}
		if b, err := os.ReadFile(l.RecordFile(e.Name())); err == nil && json.Unmarshal(b, &rec) == nil && rec.Sandbox != nil {
			ids[rec.Sandbox.ID] = true
		}
	}
	return ids
}

// ipOwner is the container (podvisor's sandbox) host-local IPAM gave ip
// to: the first line of its file.
func ipOwner(ip string) string {
	b, _ := os.ReadFile(filepath.Join(env.Dir, "cni", "ipam", env.NetName, ip))
	owner, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(owner)
}

// newIPs lists the test network's allocated IPs that were not allocated
// when the daemon was made: a test counts only its own pods' addresses,
// and a leak of an earlier test (reported there) does not fail it too.
func (d *daemon) newIPs() []string {
	d.t.Helper()
	return slices.DeleteFunc(allocatedIPs(d.t), func(ip string) bool { return slices.Contains(d.baseIPs, ip) })
}

// hostLocalIPs is allocatedIPs returning its error.
func hostLocalIPs() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(env.Dir, "cni", "ipam", env.NetName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, e := range entries {
		if n := e.Name(); n != "lock" && !strings.HasPrefix(n, "last_reserved_ip") {
			ips = append(ips, n)
		}
	}
	return ips, nil
}

func shimCount(ns string) int {
	n := 0
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && strings.HasSuffix(args[0], "containerd-shim-runc-v2") && strings.Contains(string(b), "\x00-namespace\x00"+ns+"\x00") {
			n++
		}
	}
	return n
}

func statusPods(d *daemon) ([]string, error) {
	l, err := api.NewClient(d.sock).Pods(context.Background())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names, nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// offline makes every registry pull of podvisor (and of this process) go
// to a loopback port nothing serves: images not in the images dir fail to
// pull at once, and no test sends a packet off this machine (not even a
// DNS query for a registry's name: a proxied request is not resolved
// locally). Pod addresses (the test networks' private ranges) and
// loopback are reached directly. Child processes inherit it.
func offline() {
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		os.Setenv(k, "http://127.0.0.1:9")
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		os.Setenv(k, "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16")
	}
}

// waitHTTP polls url until its body is want.
func (d *daemon) waitHTTP(url, want string) {
	d.t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	d.poll("HTTP answer "+strconv.Quote(want)+" from "+url, 20*time.Second, func() (bool, string) {
		resp, err := c.Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b) == want, fmt.Sprintf("got %d %q", resp.StatusCode, b)
	})
}

// waitLogLine polls podvisor's log until one line holds every word.
func (d *daemon) waitLogLine(words ...string) {
	d.t.Helper()
	d.poll("a log line with "+strings.Join(words, " and "), 20*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(d.logFile)
		for _, line := range strings.Split(string(b), "\n") {
			all := true
			for _, w := range words {
				all = all && strings.Contains(line, w)
			}
			if all {
				return true, ""
			}
		}
		return false, "not logged"
	})
}
