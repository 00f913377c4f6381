package containerd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/pkg/dialer"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	"github.com/podvisor/podvisor/supervise"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeShimEnv makes the test binary act as a runc shim that serves
// nothing: it listens on the socket the variable names and waits.
const fakeShimEnv = "PODVISOR_TEST_FAKE_SHIM"

// fakeShimChildEnv makes a fake shim start a child first, as a shim
// starts a task's log driver: "log-driver" runs one with podvisor's log
// driver's command line, "other" one with another; either waits for the
// end of its stdin, a pipe the fake shim holds open.
const fakeShimChildEnv = "PODVISOR_TEST_FAKE_SHIM_CHILD"

// fakeChildEnv makes the test binary act as that child.
const fakeChildEnv = "PODVISOR_TEST_FAKE_CHILD"

// fakeChildStdin is the fake shim's end of its child's stdin, kept open
// (and from the garbage collector) while the fake shim lives.
var fakeChildStdin *os.File

func TestMain(m *testing.M) {
	if os.Getenv(fakeChildEnv) != "" {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if sock := os.Getenv(fakeShimEnv); sock != "" {
		if kind := os.Getenv(fakeShimChildEnv); kind != "" {
			r, w, err := os.Pipe()
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake shim:", err)
				os.Exit(3)
			}
			self, err := os.Executable() // os.Args[0] is the fake shim's name
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake shim:", err)
				os.Exit(3)
			}
			child := exec.Command(self)
			child.Args = []string{"/fake/podvisor-log-driver", "log-driver", "10:1:/nowhere/0.log"}
			if kind != "log-driver" {
				child.Args = []string{"/fake/container-init", "sleep"}
			}
			child.Env = []string{fakeChildEnv + "=1"}
			child.Stdin = r
			if err := child.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "fake shim:", err)
				os.Exit(3)
			}
			r.Close()
			fakeChildStdin = w
		}
		os.MkdirAll(filepath.Dir(sock), 0o711)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake shim:", err)
			os.Exit(3)
		}
		for {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}
	}
	// Pulls go to a loopback port nothing serves: no test sends a packet
	// (not even a DNS query for a registry) off this machine.
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY"} {
		os.Setenv(k, "http://127.0.0.1:9")
	}
	os.Setenv("NO_PROXY", "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16")
	os.Exit(m.Run())
}

func TestParseShim(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "pv", "-id", "abc", "-address", "/run/containerd/containerd.sock"}, true},
		{[]string{"containerd-shim-runc-v2", "-namespace", "pv", "-address", "/a.sock", "-publish-binary", "/c", "-id", "x"}, true},
		{[]string{"containerd-shim-runc-v2", "-namespace", "other", "-id", "abc", "-address", "/a.sock"}, false},
		{[]string{"containerd-shim-runc-v2", "-namespace", "pv", "-id", "abc", "-address", "/a.sock", "start"}, false},
		{[]string{"containerd", "-namespace", "pv", "-address", "/a.sock"}, false},
		{nil, false},
	} {
		sh, ok := parseShim(tc.args, "pv")
		if ok != tc.ok || (ok && sh.address == "") {
			t.Errorf("%q: %+v %v, want %v", tc.args, sh, ok, tc.ok)
		}
	}
	table := []byte("Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 4242 /run/containerd/s/abc\n" +
		"0000000000000000: 00000003 00000000 00000000 0001 03 4243 /run/containerd/s/abc\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 4244 /tmp/other.sock\n")
	if got := socketPath(table, map[string]bool{"4242": true, "4243": true}); got != "/run/containerd/s/abc" {
		t.Errorf("socketPath = %q", got)
	}
	if got := socketPath(table, map[string]bool{"4244": true}); got != "" {
		t.Errorf("a socket outside the shim root counted: %q", got)
	}
	if a, b := shimSocket("/run/c.sock", "pv", "g1"), shimSocket("/run/c.sock", "pv", "g2"); a == b || !strings.HasPrefix(a, shimSocketRoot+"/") {
		t.Errorf("shim sockets %q %q", a, b)
	}
}

// Collect drops leftover leases (and the snapshots only they held),
// unlabelled containers, and a shim that serves no task; it keeps the shim
// of a running container.
func TestCollect(t *testing.T) {
	_, env, c, rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := importFile(ctx, rt, env.ImageArchive); err != nil {
		t.Fatal(err)
	}
	img, err := rt.EnsureImage(ctx, &v1.Container{Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	// What a podvisor killed in the middle of a create leaves: its lease
	// holding an active snapshot.
	ls := c.LeasesService()
	l, err := ls.Create(ctx, leases.WithRandomID(), leases.WithLabels(earlierLease("create")))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.GetImage(ctx, img.Ref)
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := ci.RootFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sn := c.SnapshotService("overlayfs")
	if _, err := sn.Prepare(leases.WithLease(ctx, l.ID), "half-made", chainID(t, diffs)); err != nil {
		t.Fatalf("prepare under a lease: %v", err)
	}
	// A container without podvisor's labels.
	if _, err := c.NewContainer(ctx, "stranger", client.WithNewSpec()); err != nil {
		t.Fatal(err)
	}
	// A running container of a pod, whose shim must stay.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}, Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}}
	cfg := supervise.ContainerConfig{
		ID: "keep", Image: img, Pod: pod, SandboxID: "sb-keep",
		Labels:      map[string]string{supervise.LabelPodUID: "u1", supervise.LabelSandboxID: "sb-keep"},
		Container:   &v1.Container{Name: "keep", Command: []string{"sleep", "1000"}},
		CgroupsPath: filepath.Join("/", env.Namespace, "keep"), Resources: supervise.Resources{CPUShares: 2, CPUPeriod: 100000},
	}
	if err := rt.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, "keep", filepath.Join(t.TempDir(), "keep.log")); err != nil {
		t.Fatal(err)
	}
	// A shim of this namespace that serves nothing.
	sock := shimSocket(env.Address, env.Namespace, "sb-gone")
	fake := exec.Command(os.Args[0])
	fake.Args = []string{"/fake/containerd-shim-runc-v2", "-namespace", env.Namespace, "-id", "gone", "-address", env.Address}
	fake.Env = append(os.Environ(), fakeShimEnv+"="+sock)
	var fakeOut bytes.Buffer
	fake.Stdout, fake.Stderr = &fakeOut, &fakeOut
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	defer fake.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- fake.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for got := ""; got != sock; got = listeningSocket(fake.Process.Pid) {
		select {
		case err := <-exited:
			t.Fatalf("the fake shim ended before listening: %v\n%s", err, fakeOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake shim did not listen on %s (found %q)", sock, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := len(findShims(env.Namespace, "", nil))

	done, err := rt.Collect(ctx)
	if err != nil {
		t.Fatalf("Collect: %v (removed %v)", err, done)
	}
	t.Logf("collected %v", done)
	select {
	case err := <-exited:
		if ws, ok := fake.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("fake shim ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shim that serves nothing was not killed")
	}
	if after := len(findShims(env.Namespace, "", nil)); after != before-1 {
		t.Errorf("shims %d → %d, want only the orphan gone", before, after)
	}
	if st, err := rt.State(ctx, "keep"); err != nil || !st.Running {
		t.Fatalf("the running container was hurt: %+v %v", st, err)
	}
	if list, _ := ls.List(ctx); len(list) != 0 {
		t.Errorf("leases left: %v", list)
	}
	if _, err := sn.Stat(ctx, "half-made"); err == nil {
		t.Error("the snapshot only a leftover lease held is still there")
	}
	if _, err := c.LoadContainer(ctx, "stranger"); err == nil {
		t.Error("an unlabelled container was kept")
	}
	if !slices.ContainsFunc(done, func(s string) bool { return strings.HasPrefix(s, "shim ") }) {
		t.Errorf("Collect did not say it removed a shim: %v", done)
	}

	// ReleaseShims ends the shim of a sandbox whose containers have no
	// task, and keeps one whose container runs.
	_, ended := fakeShim(t, env.Address, env.Namespace, "sb-released")
	if err := rt.ReleaseShims(ctx, []string{"sb-released", "sb-keep"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the shim of a sandbox without tasks was not ended")
	}
	if st, err := rt.State(ctx, "keep"); err != nil || !st.Running {
		t.Fatalf("the running container's shim was ended: %+v %v", st, err)
	}
	rt.Stop(ctx, "keep", 0)
	rt.Remove(ctx, "keep")
}

// hasAnyChild reports whether pid has a child process, of any kind.
func hasAnyChild(pid int) bool {
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	for _, th := range tasks {
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", th.Name(), "children")); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return true
		}
	}
	return false
}

// chainID is the snapshot key of an image's top layer (OCI chain ID).
func chainID(t *testing.T, diffs []digest.Digest) string {
	t.Helper()
	return identity.ChainID(diffs).String()
}

// earlierLease labels a lease as an earlier podvisor's, taken for what.
func earlierLease(what string) map[string]string {
	return map[string]string{leaseLabel: what, leaseOwnerLabel: "an earlier podvisor"}
}

// A lease this Runtime holds (an image import beside podvisor's start-up)
// is not a leftover, nor is another client's lease in the namespace (ctr
// importing an image, a test reading one while podvisor starts): Collect
// leaves them and takes only the earlier podvisor's.
func TestCollectKeepsOwnLeases(t *testing.T) {
	_, _, c, rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ls := c.LeasesService()
	stale, err := ls.Create(ctx, leases.WithRandomID(), leases.WithLabels(earlierLease("import")))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Delete(ctx, foreign)
	err = rt.withLease(ctx, "import", func(lctx context.Context) error {
		own, _ := leases.FromContext(lctx)
		removed, err := rt.Collect(ctx)
		if err != nil {
			return err
		}
		if !slices.Equal(removed, []string{"lease " + stale.ID}) {
			t.Errorf("collected %v: want only the stale lease %s, not the held one %s nor another client's %s", removed, stale.ID, own, foreign.ID)
		}
		all, err := ls.List(ctx)
		if err != nil {
			return err
		}
		for _, id := range []string{own, foreign.ID} {
			if !slices.ContainsFunc(all, func(l leases.Lease) bool { return l.ID == id }) {
				t.Errorf("lease %s is gone", id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A lease just created, before withLease has run anything under it
	// (the import's, in the moment Collect lists leases at start-up), is
	// this Runtime's too.
	fresh, err := ls.Create(ctx, leases.WithRandomID(), leases.WithLabels(rt.leaseLabels("import")))
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Delete(ctx, fresh)
	removed, err := rt.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(removed, "lease "+fresh.ID) {
		t.Errorf("collected %v: the lease this Runtime just took, %s, among them", removed, fresh.ID)
	}
}

// fakeShim starts the test binary as a runc shim of group that serves
// nothing, and returns a channel closed when it ends.
func fakeShim(t *testing.T, address, ns, group string) (pid int, ended <-chan struct{}) {
	return fakeShimWithChild(t, address, ns, group, "")
}

// fakeShimWithChild is fakeShim whose shim has a child of kind (see
// fakeShimChildEnv; "" for none).
func fakeShimWithChild(t *testing.T, address, ns, group, kind string) (pid int, ended <-chan struct{}) {
	t.Helper()
	sock := shimSocket(address, ns, group)
	cmd := exec.Command(os.Args[0])
	cmd.Args = []string{"/fake/containerd-shim-runc-v2", "-namespace", ns, "-id", group, "-address", address}
	cmd.Env = append(os.Environ(), fakeShimEnv+"="+sock, fakeShimChildEnv+"="+kind)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	for deadline := time.Now().Add(30 * time.Second); listeningSocket(cmd.Process.Pid) != sock; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the fake shim of %s did not listen on %s", group, sock)
		}
	}
	return cmd.Process.Pid, done
}

// CollectShims (once adoption is done, after each removal) ends a shim whose group no container
// belongs to — the one containerd leaves holding a container whose task
// creation podvisor's death cut short — and keeps the shim of a group
// that still has a container, even one without a task (its task may be
// being created).
func TestCollectShims(t *testing.T) {
	_, env, _, rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := importFile(ctx, rt, env.ImageArchive); err != nil {
		t.Fatal(err)
	}
	img, err := rt.EnsureImage(ctx, &v1.Container{Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u2"}, Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}}
	cfg := supervise.ContainerConfig{
		ID: "owner", Image: img, Pod: pod, SandboxID: "sb-owned",
		Labels:      map[string]string{supervise.LabelPodUID: "u2", supervise.LabelSandboxID: "sb-owned"},
		Container:   &v1.Container{Name: "owner", Command: []string{"sleep", "1000"}},
		CgroupsPath: filepath.Join("/", env.Namespace, "owner"), Resources: supervise.Resources{CPUShares: 2, CPUPeriod: 100000},
	}
	if err := rt.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	ownedPID, ownedEnded := fakeShim(t, env.Address, env.Namespace, "sb-owned")
	orphanPID, orphanEnded := fakeShim(t, env.Address, env.Namespace, "sb-given-up")
	// A cut-short task creation can leave its log driver waiting as the
	// shim's child: that child does not keep the shim. Any other child
	// (a container's process) does.
	loggedPID, loggedEnded := fakeShimWithChild(t, env.Address, env.Namespace, "sb-logged", "log-driver")
	_, busyEnded := fakeShimWithChild(t, env.Address, env.Namespace, "sb-busy", "other")
	for _, pid := range []int{loggedPID} {
		for deadline := time.Now().Add(30 * time.Second); !hasAnyChild(pid); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the fake shim %d started no child", pid)
			}
		}
	}

	killed, err := rt.CollectShims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		what  string
		ended <-chan struct{}
	}{{"of a group no container belongs to", orphanEnded}, {"whose only child is a log driver", loggedEnded}} {
		select {
		case <-e.ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("the shim %s was not ended", e.what)
		}
	}
	want := []string{fmt.Sprintf("shim %d", orphanPID), fmt.Sprintf("shim %d", loggedPID)}
	if slices.Sort(killed); !slices.Equal(killed, slices.Sorted(slices.Values(want))) {
		t.Errorf("CollectShims said %v, want %v", killed, want)
	}
	select {
	case <-busyEnded:
		t.Fatal("the shim with a child that is not a log driver was ended")
	default:
	}
	select {
	case <-ownedEnded:
		t.Fatal("the shim of a group whose container exists (no task yet) was ended")
	default:
	}

	if err := rt.Remove(ctx, "owner"); err != nil {
		t.Fatal(err)
	}
	if killed, err = rt.CollectShims(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ownedEnded:
	case <-time.After(10 * time.Second):
		t.Fatalf("the shim stayed once its group's last container was removed (said %v)", killed)
	}
	if want := fmt.Sprintf("shim %d", ownedPID); !slices.Equal(killed, []string{want}) {
		t.Errorf("CollectShims said %v, want [%s]", killed, want)
	}
}

// TestWithLeaseStoppedDuringCreate: podvisor stopping while containerd
// creates a lease (the caller's context ends before the answer arrives)
// leaves no lease behind: the create is not the caller's to cancel, and
// the lease made is released without running anything under it.
func TestWithLeaseStoppedDuringCreate(t *testing.T) {
	_, env, _, _ := startRuntime(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// Containerd makes the lease; the answer reaches a caller whose context
	// ended meanwhile, as when podvisor stops in that moment.
	stopDuringCreate := func(cctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !strings.HasSuffix(method, ".Leases/Create") {
			return invoke(cctx, method, req, reply, cc, opts...)
		}
		err := invoke(context.WithoutCancel(cctx), method, req, reply, cc, opts...)
		stop()
		if cctx.Err() != nil {
			return cctx.Err()
		}
		return err
	}
	c, err := client.New(env.Address, client.WithDefaultNamespace(env.Namespace), client.WithDialOpts([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer.ContextDialer),
		grpc.WithUnaryInterceptor(stopDuringCreate),
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rt := New(c, Options{Namespace: env.Namespace})
	ran := false
	err = rt.withLease(ctx, "import", func(context.Context) error { ran = true; return nil })
	if err == nil || ran {
		t.Errorf("withLease after its context ended: %v, f ran %v; want an error and f not run", err, ran)
	}
	lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := c.LeasesService().List(lctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		t.Errorf("lease %s %v left after a create its caller gave up on", l.ID, l.Labels)
	}
}
