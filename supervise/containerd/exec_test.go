package containerd

import (
	"bytes"
	"context"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/testenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startCutShort is a process whose start outlives its caller: the
// session's context ends while the shim is still starting it.
type startCutShort struct {
	endSession context.CancelFunc
	started    bool
}

func (p *startCutShort) Start(ctx context.Context) error {
	p.endSession()
	if err := ctx.Err(); err != nil {
		return err // the start given up on our side; the shim's goes on
	}
	p.started = true
	return nil
}

// TestStartProcessOutlivesSession guards the exec'd process left running
// when podvisor stopped during its start: the start must not be cut short
// by the session's end, so the caller gets a started process it then
// kills, rather than an error and a process nobody kills.
func TestStartProcessOutlivesSession(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &startCutShort{endSession: cancel}
	if err := startProcess(ctx, p); err != nil || !p.started {
		t.Fatalf("startProcess with the session ending during the start: err %v, started %v; want the start seen through", err, p.started)
	}
	if ctx.Err() == nil {
		t.Fatal("the session did not end; the test proves nothing")
	}
}

// TestExecChildHoldsOutput guards the pod wedged by a preStop hook
// `sh -c 'sleep 600 & echo bye'`: the hook's process exits at once, but
// its child holds the output open, and Exec waited for that output with no
// bound. Every exec returns by its own deadline — a hook's share of the
// grace period, a probe's timeout, an interactive session's end — with
// the output it had by then. The same container then serves
// execWithoutStdin's steps.
func TestExecChildHoldsOutput(t *testing.T) {
	dir, env, _, rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := importFile(ctx, rt, env.ImageArchive); err != nil {
		t.Fatal(err)
	}
	img, err := rt.EnsureImage(ctx, &v1.Container{Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u-hold"}, Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}}
	cfg := supervise.ContainerConfig{
		ID: "hold", Image: img, Pod: pod, SandboxID: "sb-hold",
		Labels:      map[string]string{supervise.LabelPodUID: "u-hold", supervise.LabelSandboxID: "sb-hold"},
		Container:   &v1.Container{Name: "hold", Command: []string{"sleep", "1000"}},
		CgroupsPath: filepath.Join("/", env.Namespace, "hold"), Resources: supervise.Resources{CPUShares: 2, CPUPeriod: 100000},
	}
	if err := rt.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, "hold", filepath.Join(dir, "hold.log")); err != nil {
		t.Fatal(err)
	}
	defer func() {
		rt.Stop(ctx, "hold", 0)
		rt.Remove(ctx, "hold")
	}()
	holder := []string{"sh", "-c", "sleep 600 & echo bye"}
	// margin is what a return may take past the deadline (two shim
	// calls on a loaded machine).
	const margin = 2 * time.Second
	within := func(what string, deadline time.Duration, call func(context.Context) (int, error)) (int, error) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, deadline)
		defer ccancel()
		type result struct {
			code int
			err  error
		}
		res := make(chan result, 1)
		start := time.Now()
		go func() {
			code, err := call(cctx)
			res <- result{code, err}
		}()
		select {
		case r := <-res:
			if took := time.Since(start); took > deadline+margin {
				t.Errorf("%s returned after %s, past its deadline %s", what, took.Round(time.Millisecond), deadline)
			}
			return r.code, r.err
		case <-time.After(deadline + 10*time.Second):
			t.Fatalf("%s did not return 10 s after its deadline %s: a child holding the output wedges it", what, deadline)
			return 0, nil
		}
	}
	for _, tc := range []struct {
		what     string
		deadline time.Duration
	}{
		{"a preStop-like exec (the hook's share of the grace period)", 3 * time.Second},
		{"a probe-like exec (its timeout)", time.Second},
	} {
		var out bytes.Buffer
		code, err := within(tc.what, tc.deadline, func(cctx context.Context) (int, error) {
			return rt.Exec(cctx, "hold", supervise.ExecProcess{Args: holder, Stdout: &out, Stderr: &out})
		})
		if err != nil || code != 0 || !strings.Contains(out.String(), "bye") {
			t.Errorf("%s = %d, %v, output %q; want 0 and the output written before the deadline", tc.what, code, err, out.String())
		}
	}
	var out bytes.Buffer
	code, err := within("an interactive exec (the session's end)", 2*time.Second, func(cctx context.Context) (int, error) {
		return rt.ExecStream(cctx, "hold", holder, Streams{Stdout: &out, Stderr: &out})
	})
	if err != nil || code != 0 || !strings.Contains(out.String(), "bye") {
		t.Errorf("interactive exec = %d, %v, output %q; want 0 and the output written before the session ended", code, err, out.String())
	}
	execWithoutStdin(t, ctx, env, rt, "hold")
}

// execWithoutStdin runs a probe's exec (no stdin, stdout and stderr into
// one writer) in the running container id: both streams reach the writer
// with the exit code; an output far past a pipe's buffer does not stall
// the process (the fifo is read while it runs); and a second run of the
// same command makes exactly the four calls an exec needs (exec, start,
// wait, delete), its container and spec kept from the first.
func execWithoutStdin(t *testing.T, ctx context.Context, env *testenv.Env, rt *Runtime, id string) {
	t.Helper()
	var out bytes.Buffer
	code, err := rt.Exec(ctx, id, supervise.ExecProcess{Args: []string{"sh", "-c", "echo out; sleep 0.1; echo err >&2; exit 4"}, Stdout: &out, Stderr: &out})
	if err != nil || code != 4 || out.String() != "out\nerr\n" {
		t.Errorf("exec with one writer = %d, %v, %q; want 4 and both streams", code, err, out.String())
	}
	var n countWriter
	code, err = rt.Exec(ctx, id, supervise.ExecProcess{Args: []string{"sh", "-c", "head -c 1000000 /dev/zero; exit 2"}, Stdout: &n, Stderr: &n})
	if err != nil || code != 2 || n != 1000000 {
		t.Errorf("exec writing 1 MB = %d, %v, %d bytes; want 2 and every byte", code, err, n)
	}

	var mu sync.Mutex
	var calls []string
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		mu.Lock()
		calls = append(calls, path.Base(method))
		mu.Unlock()
		return invoke(namespaces.WithNamespace(ctx, env.Namespace), method, req, reply, cc, opts...)
	}
	conn, err := grpc.NewClient("unix://"+env.Address, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(count))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c, err := client.New(env.Address, client.WithDefaultNamespace(env.Namespace), client.WithServices(client.WithTaskClient(tasks.NewTasksClient(conn))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	counted := New(c, Options{Namespace: env.Namespace})
	probe := supervise.ExecProcess{Args: []string{"true"}, Stdout: &out, Stderr: &out}
	for run := range 2 {
		mu.Lock()
		calls = nil
		mu.Unlock()
		if code, err := counted.Exec(ctx, id, probe); err != nil || code != 0 {
			t.Fatalf("exec of true = %d, %v", code, err)
		}
		mu.Lock()
		got := slices.Clone(calls)
		mu.Unlock()
		if want := []string{"Exec", "Start", "Wait", "DeleteProcess"}; run == 1 && !slices.Equal(got, want) {
			t.Errorf("the second run of a probe's exec made the task calls %v, want %v", got, want)
		}
	}
}

// countWriter counts the bytes written to it.
type countWriter int

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}
