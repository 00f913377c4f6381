package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/probes"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// workerDeps is everything a pod worker uses of its Supervisor, built once
// by New. The worker holds a pointer to it, never to the Supervisor: what
// it shares with others (container owners, probed containers, the
// runtime's reachability, the image generation) is here, each behind its
// own lock or atomic.
type workerDeps struct {
	layout    layout.Layout
	rt        Runtime
	net       Network
	status    StatusSink
	sandboxes Sandboxes
	log       *slog.Logger
	cg        cgroups
	clock     clock.WithTicker
	images    ImageGate

	nodeName     string
	nodeIP       string
	cgroupParent string
	logLinks     string
	// clusterDomain is Options.ClusterDomain.
	clusterDomain string
	// runtimeClass resolves a pod's runtime class (Options.RuntimeClass).
	runtimeClass func(name string) error

	prober Prober
	// readDrops reads a log's drops status (crilog.ReadDrops; a test's
	// counter).
	readDrops func(logPath string) (crilog.Drops, error)
	runHook   func(ctx context.Context, h *v1.LifecycleHandler, t probes.Target) (string, error)

	oomFloor   int // lowest oom_score_adj this host accepts (0 or -1000)
	machineMem int64
	// stateFS is the size of the state dir's filesystem: the node's
	// ephemeral storage, as kubelet's is its root dir's (0: unknown).
	stateFS int64

	// imageGen counts image imports, so a pod waiting out a failed pull
	// retries at once when new images arrive.
	imageGen atomic.Int64
	// down is set while the runtime cannot be reached.
	down atomic.Pointer[runtimeDown]
	// pressure is the eviction signals under pressure (SetPressure);
	// nil until it is first told.
	pressure atomic.Pointer[pressure]
	// unpublished counts the workers started with the first snapshot that
	// have not published yet.
	unpublished atomic.Int64

	owners owners
	probed probedSet
	// userns hands out the pods' user namespace ranges; usernsRT tells
	// what the runtime can do for them (nil: nothing).
	userns   *usernsAllocator
	usernsRT UserNSRuntime
	// users tells containers' identities (nil: the runtime does not).
	users UserReporter
	// readiness is every pod's readiness, for the pods that wait for
	// others (podvisor.io/wait-for).
	readiness podReadiness
	// devices are the CDI devices the pods hold (devices.go).
	devices *devicePool
	// admitPod is the node's own admission (admit.go; nil: all admitted).
	admitPod AdmitFunc
	// imageVolumes mounts image volumes (imagevolume.go; nil: the
	// runtime cannot).
	imageVolumes ImageVolumeMounter
	// claims are the volumes root and the pods' claims (pvc.go).
	claims *claimPool
}

// owners maps running containers to their workers, for routing the
// runtime's events and the probes' results.
type owners struct {
	mu   sync.Mutex
	byID map[string]*podWorker
	// unclaimed are the last exits that arrived for a container no worker
	// owned yet: a worker that observed it running claims it only after
	// observing, and an exit between the two would otherwise wait for the
	// relist. Claiming such a container wakes its worker at once.
	unclaimed []string
}

// maxUnclaimed bounds owners.unclaimed (exits of containers no worker
// will claim, such as one being removed, age out).
const maxUnclaimed = 64

// probedSet is what an event about each probed container names, by
// container ID.
type probedSet struct {
	mu   sync.Mutex
	byID map[string]probeOwner
}

func (p *probedSet) set(id string, o probeOwner) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byID == nil {
		p.byID = map[string]probeOwner{}
	}
	p.byID[id] = o
}

func (p *probedSet) get(id string) (probeOwner, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.byID[id]
	return o, ok
}

func (p *probedSet) remove(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byID, id)
}

func (d *workerDeps) track(id string, w *podWorker) {
	d.owners.mu.Lock()
	if d.owners.byID == nil {
		d.owners.byID = map[string]*podWorker{}
	}
	d.owners.byID[id] = w
	i := slices.Index(d.owners.unclaimed, id)
	if i >= 0 {
		d.owners.unclaimed = slices.Delete(d.owners.unclaimed, i, i+1)
	}
	d.owners.mu.Unlock()
	if i >= 0 {
		w.inbox.send(wakeMsg{}) // it exited before it was claimed
	}
}

// exitOwner is the worker an exit of container id goes to; with none, the
// exit is kept for track.
func (d *workerDeps) exitOwner(id string) *podWorker {
	d.owners.mu.Lock()
	defer d.owners.mu.Unlock()
	if w := d.owners.byID[id]; w != nil {
		return w
	}
	if !slices.Contains(d.owners.unclaimed, id) {
		if len(d.owners.unclaimed) == maxUnclaimed {
			d.owners.unclaimed = slices.Delete(d.owners.unclaimed, 0, 1)
		}
		d.owners.unclaimed = append(d.owners.unclaimed, id)
	}
	return nil
}

func (d *workerDeps) untrack(id string) {
	d.owners.mu.Lock()
	defer d.owners.mu.Unlock()
	delete(d.owners.byID, id)
}

func (d *workerDeps) owner(id string) *podWorker {
	d.owners.mu.Lock()
	defer d.owners.mu.Unlock()
	return d.owners.byID[id]
}

// newCrashBackoff is a container's restart back-off (kubelet's).
func (d *workerDeps) newCrashBackoff() *backoff.Backoff { return backoff.Kubelet(d.clock.Now) }

// newRetry is the back-off of a failing start or sandbox step: 10 s
// doubling to 300 s as kubelet's image pull back-off, with jitter.
func (d *workerDeps) newRetry() *backoff.Backoff {
	return &backoff.Backoff{Initial: 10 * time.Second, Max: 300 * time.Second, Jitter: 0.1, ResetAfter: 600 * time.Second, Now: d.clock.Now}
}

// newSyncRetry is the back-off of a failing sandbox step: kubelet retries
// a pod whose sync failed after its pod worker back-off, 10 s with up to
// 50 % jitter, without growing (pkg/kubelet/pod_workers.go), so a CNI
// config that appears late is picked up within seconds.
func (d *workerDeps) newSyncRetry() *backoff.Backoff {
	return &backoff.Backoff{Initial: 10 * time.Second, Max: 10 * time.Second, Jitter: 0.5, Now: d.clock.Now}
}

// ensureImage waits for the start-up import of the container's image from
// the images dir, then finds the image.
func (d *workerDeps) ensureImage(ctx context.Context, c *v1.Container) (Image, error) {
	if d.images != nil {
		if err := d.images.Wait(ctx, c.Image); err != nil {
			return Image{}, err
		}
	}
	return d.rt.EnsureImage(ctx, c)
}

// nodeEvent records an event about the node.
func (d *workerDeps) nodeEvent(typ, reason, format string, args ...any) {
	d.status.Record(status.Event{Node: d.nodeName, Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// oomScoreAdj computes kubelet's OOM score for the container, raised to
// what this host accepts (nested and rootless hosts refuse negative values),
// with a warning when it had to be raised.
func (d *workerDeps) oomScoreAdj(pod *v1.Pod, c *v1.Container) (int, string) {
	adj := oomScoreAdj(pod, c, d.machineMem)
	if adj < d.oomFloor {
		return d.oomFloor, fmt.Sprintf("this host refuses oom_score_adj %d; using %d", adj, d.oomFloor)
	}
	return adj, ""
}

// removePodContainers kills and removes every container labelled with the
// pod's UID, then ends what the runtime still runs for their sandboxes and
// extra ones.
func (d *workerDeps) removePodContainers(ctx context.Context, uid types.UID, sandboxes ...string) error {
	all, err := d.rt.List(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range all {
		if c.Labels[LabelPodUID] != string(uid) {
			continue
		}
		sandboxes = append(sandboxes, c.Labels[LabelSandboxID])
		if err := d.rt.Stop(ctx, c.ID, 0); err != nil {
			errs = append(errs, err)
		}
		if err := d.rt.Remove(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
		d.untrack(c.ID)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	slices.Sort(sandboxes)
	return d.rt.ReleaseShims(ctx, slices.Compact(sandboxes))
}

// timeout is context.WithTimeout on the deps' clock, for a wait whose end
// is a decision (a preStop hook's share of the grace period), so a fake
// clock drives it in tests. Request timeouts of the runtime and the network
// stay on the wall clock: the I/O they bound runs on it.
func (d *workerDeps) timeout(ctx context.Context, t time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	timer := d.clock.NewTimer(t)
	go func() {
		defer timer.Stop()
		select {
		case <-timer.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
