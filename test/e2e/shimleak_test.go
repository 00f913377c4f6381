package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/supervise"
)

var (
	fakeShimOnce sync.Once
	fakeShimBin  string
	fakeShimErr  error
)

// idleShim starts a runc shim of group in d's containerd namespace that
// serves no task — what containerd leaves when podvisor is killed while
// it creates a task — and returns a channel closed when it ends. It is
// test/fakeshim under the shim's name, listening where containerd's shim
// of that group listens (containerd's shim.SocketAddress).
func (d *daemon) idleShim(group string) <-chan struct{} {
	d.t.Helper()
	fakeShimOnce.Do(func() {
		// In the binaries' directory, which the run removes at its end.
		dir, err := os.MkdirTemp(binDir, "fakeshim-")
		if err != nil {
			fakeShimErr = err
			return
		}
		fakeShimBin = filepath.Join(dir, "containerd-shim-runc-v2")
		build := exec.Command("go", "build", "-o", fakeShimBin, "github.com/podvisor/podvisor/test/fakeshim")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fakeShimErr = fmt.Errorf("build fakeshim: %v\n%s", err, out)
		}
	})
	if fakeShimErr != nil {
		d.t.Fatal(fakeShimErr)
	}
	sock := fmt.Sprintf("/run/containerd/s/%x", sha256.Sum256([]byte(filepath.Join(env.Address, d.ns, group))))
	cmd := exec.Command(fakeShimBin, "-namespace", d.ns, "-id", group, "-address", env.Address)
	cmd.Env = append(os.Environ(), "PODVISOR_FAKE_SHIM_SOCKET="+sock)
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { cmd.Wait(); close(ended) }()
	d.t.Cleanup(func() { cmd.Process.Kill(); <-ended; os.Remove(sock) })
	d.poll("the idle shim of "+group+" to listen", 10*time.Second, func() (bool, string) {
		select {
		case <-ended:
			return false, "it ended"
		default:
		}
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})
	return ended
}

// shimGone polls until the shim whose end is ended has ended.
func (d *daemon) shimGone(what string, ended <-chan struct{}, timeout time.Duration) {
	d.t.Helper()
	d.poll(what, timeout, func() (bool, string) {
		select {
		case <-ended:
			return true, ""
		default:
			return false, "the shim still runs\n" + d.logTail()
		}
	})
}

// TestShimLeftByCutStart: the shim containerd leaves when podvisor is
// killed while it creates a task is ended once the restarted podvisor's
// adoption has settled — its container, which no pod record names, is
// removed by adoption, after the start-up collection that kept the shim
// for it — and a shim serving no task is ended after a pod's removal; no
// relist is needed (the test's is an hour).
func TestShimLeftByCutStart(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("leak.yaml", `apiVersion: v1
kind: Pod
metadata: {name: leak}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
	name := "leak-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	d.killGroup()

	// What the cut-short start left: the container podvisor was creating
	// a task for (in a sandbox it had not recorded), and its shim.
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	group := "cut-" + randHex(8)
	if _, err := cl.NewContainer(ctx, group+"-main", containerd.WithNewSpec(), containerd.WithContainerLabels(map[string]string{
		supervise.LabelPodUID: string(p.UID), supervise.LabelSandboxID: group, supervise.LabelContainer: "main",
	})); err != nil {
		t.Fatal(err)
	}
	cutShim := d.idleShim(group)

	d.start()
	d.shimGone("the shim of the cut-short start to end once adoption settled", cutShim, 20*time.Second)
	if _, err := cl.LoadContainer(ctx, group+"-main"); err == nil {
		t.Error("adoption kept the container no pod record names")
	}
	d.waitPod(name, 30*time.Second, "Running after the restart", running)

	idle := d.idleShim("idle-" + randHex(8))
	d.removeManifest("leak.yaml")
	d.waitGone(name, 30*time.Second)
	d.shimGone("the idle shim to end after the pod's removal", idle, 20*time.Second)
}
