package containerd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/supervise"
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
// the output it had by then.
func TestExecChildHoldsOutput(t *testing.T) {
	dir, env, _, rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := rt.Import(ctx, env.ImageArchive); err != nil {
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
}
