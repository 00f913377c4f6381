package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/podvisor/podvisor/cni"
	v1 "k8s.io/api/core/v1"
)

// DefaultRequestTimeout bounds one call to the runtime or the network, as
// kubelet's --runtime-request-timeout does.
const DefaultRequestTimeout = 2 * time.Minute

// ErrRuntimeUnavailable marks an error of a runtime that did not answer
// (containerd down or restarting): no decision is taken on it and nothing
// is charged to a back-off.
var ErrRuntimeUnavailable = errors.New("container runtime unavailable")

// Bounded returns rt with every call bounded by d: a call that hangs (a
// stuck shim, a registry that never answers, an import of a huge archive)
// fails with context.DeadlineExceeded instead of holding its pod. EnsureImage
// is left to the runtime's own bounds (a pull's progress deadline). Stop is
// bounded by its grace period plus d; Events and Exec by their callers.
func Bounded(rt Runtime, d time.Duration) Runtime {
	if d <= 0 {
		return rt
	}
	b := boundedRuntime{rt: rt, d: d}
	if l, ok := rt.(TaskLister); ok {
		return boundedLister{boundedRuntime: b, l: l}
	}
	return b
}

// boundedLister is a bounded runtime that keeps its runtime's TaskLister.
type boundedLister struct {
	boundedRuntime
	l TaskLister
}

func (b boundedLister) TaskStates(ctx context.Context) (map[string]ContainerState, error) {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.l.TaskStates(ctx)
}

type boundedRuntime struct {
	rt Runtime
	d  time.Duration
}

func (b boundedRuntime) ctx(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.d+extra)
}

// EnsureImage is not bounded by d: a pull that keeps receiving bytes is
// never cut, one that stalls is cut by the runtime's progress deadline,
// and the runtime bounds its other calls of it (supervise/containerd's
// Options.RequestTimeout).
func (b boundedRuntime) EnsureImage(ctx context.Context, c *v1.Container) (Image, error) {
	return b.rt.EnsureImage(ctx, c)
}

func (b boundedRuntime) Create(ctx context.Context, cfg ContainerConfig) error {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.Create(ctx, cfg)
}

func (b boundedRuntime) Start(ctx context.Context, id, logPath string) error {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.Start(ctx, id, logPath)
}

func (b boundedRuntime) Stop(ctx context.Context, id string, grace time.Duration) error {
	ctx, cancel := b.ctx(ctx, grace)
	defer cancel()
	return b.rt.Stop(ctx, id, grace)
}

func (b boundedRuntime) Remove(ctx context.Context, id string) error {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.Remove(ctx, id)
}

func (b boundedRuntime) State(ctx context.Context, id string) (ContainerState, error) {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.State(ctx, id)
}

func (b boundedRuntime) Info(ctx context.Context, id string) (ContainerInfo, error) {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.Info(ctx, id)
}

func (b boundedRuntime) List(ctx context.Context) ([]ContainerInfo, error) {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.List(ctx)
}

func (b boundedRuntime) Events(ctx context.Context) (<-chan RuntimeEvent, <-chan error) {
	return b.rt.Events(ctx)
}

func (b boundedRuntime) Import(ctx context.Context, name string, archive io.Reader) ([]string, error) {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.Import(ctx, name, archive)
}

func (b boundedRuntime) Collect(ctx context.Context) ([]string, error) {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.Collect(ctx)
}

func (b boundedRuntime) ReleaseShims(ctx context.Context, ids []string) error {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.ReleaseShims(ctx, ids)
}

func (b boundedRuntime) CollectShims(ctx context.Context) ([]string, error) {
	ctx, cancel := b.ctx(ctx, 0)
	defer cancel()
	return b.rt.CollectShims(ctx)
}

func (b boundedRuntime) Exec(ctx context.Context, id string, p ExecProcess) (int, error) {
	return b.rt.Exec(ctx, id, p)
}

// boundedNetwork bounds every CNI call; libcni kills a plugin whose
// context ends.
type boundedNetwork struct {
	net Network
	d   time.Duration
}

func (b boundedNetwork) Add(ctx context.Context, id, netns string, pod cni.PodRef, ports []cni.PortMapping) (*cni.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	res, err := b.net.Add(ctx, id, netns, pod, ports)
	return res, timedOut(ctx, err)
}

func (b boundedNetwork) Del(ctx context.Context, id, netns string, pod cni.PodRef, ports []cni.PortMapping) error {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return timedOut(ctx, b.net.Del(ctx, id, netns, pod, ports))
}

func (b boundedNetwork) GC(ctx context.Context, keep map[string]bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	out, err := b.net.GC(ctx, keep)
	return out, timedOut(ctx, err)
}

// timedOut names the bound in an error caused by it (a killed plugin
// reports only "signal: killed").
func timedOut(ctx context.Context, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	}
	return err
}
