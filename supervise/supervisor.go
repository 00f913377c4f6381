package supervise

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podvisor/podvisor/cni"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/probes"
	"github.com/podvisor/podvisor/status"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Network is what the supervisor needs from the cni package.
type Network interface {
	Add(ctx context.Context, id, netns string, pod cni.PodRef, ports []cni.PortMapping) (*cni.Result, error)
	Del(ctx context.Context, id, netns string, pod cni.PodRef, ports []cni.PortMapping) error
	GC(ctx context.Context, keep map[string]bool) ([]string, error)
}

// StatusSink receives pod status, and events through the one event seam
// (status.Store implements it; status.Recorders fans events out).
type StatusSink interface {
	SetPod(pod *v1.Pod)
	DeletePod(uid types.UID)
	status.Recorder
}

// Sandboxes makes and removes pods' shared namespaces and /dev/shm on
// this host (no pause process).
type Sandboxes interface {
	// Create makes a new sandbox for pod. On failure the partial sandbox
	// is returned beside the error, so it can be removed.
	Create(pod *v1.Pod) (*Sandbox, error)
	// Alive reports whether sb still exists in this boot.
	Alive(sb *Sandbox) bool
	// Remove removes sb's namespaces, /dev/shm and directory.
	Remove(sb *Sandbox) error
	// NetNS is sb's network namespace path while it is one, else "" (for
	// a CNI DEL after the namespace is gone).
	NetNS(sb *Sandbox) string
	// Find rebuilds the record of an existing sandbox from its ID.
	Find(id string) *Sandbox
}

var (
	_ Network    = (*cni.Manager)(nil)
	_ StatusSink = (*status.Store)(nil)
)

// Options configures a Supervisor. Runtime, Network and Status are
// required; the rest have defaults.
type Options struct {
	Runtime Runtime
	Network Network
	Status  StatusSink
	Log     *slog.Logger
	// Layout holds the state, run and log dirs.
	Layout   layout.Layout
	NodeName string
	NodeIP   string
	// ClusterDomain is kubelet's clusterDomain: a pod's subdomain names
	// it <hostname>.<subdomain>.<namespace>.svc.<domain>; "": none.
	ClusterDomain string
	// CgroupRoot (default /sys/fs/cgroup) and CgroupParent (default
	// "podvisor", the containerd namespace): pod cgroups are
	// <parent>/pod<uid>.
	CgroupRoot   string
	CgroupParent string
	// PodPidsLimit is every pod cgroup's pids.max (kubelet's
	// podPidsLimit); 0 or less: none.
	PodPidsLimit int64
	// RelistPeriod is how often the runtime's containers are re-checked as
	// a safety net for missed events (default 10s): one listing of its
	// tasks when it is a TaskLister, waking only the workers of pods that
	// changed; else every worker asks for its containers' state.
	RelistPeriod time.Duration
	// Images, when set, holds a pod's look-up of an image until the images
	// dir's start-up import has brought that image in or has ended
	// (*images.Watcher is one).
	Images ImageGate
	// Sandboxes default to namespaces under Layout.RunDir.
	Sandboxes Sandboxes
	// Clock is the time source of everything that decides by time, its
	// tickers included (the relist, the heartbeat); nil is the real clock.
	Clock clock.WithTicker
	// RequestTimeout bounds every runtime and network call (default
	// DefaultRequestTimeout; negative: unbounded).
	RequestTimeout time.Duration
	// ProbeRuns, when set, hears every probe run of the default prober
	// (probes.Options.OnRun), for metrics.
	ProbeRuns func(probes.Run)
	// Prober runs the containers' probes; by default a probes.Manager
	// that runs exec probes through Runtime. Hooks, when set, runs
	// lifecycle hooks (default probes.RunHook).
	Prober Prober
	Hooks  func(ctx context.Context, h *v1.LifecycleHandler, t probes.Target) (string, error)
	// Heartbeat, when set, is called from the sync loop once it runs and
	// then every HeartbeatPeriod (default 1s), so a wedged loop stops
	// calling it (systemd's watchdog pings).
	Heartbeat       func()
	HeartbeatPeriod time.Duration
	// LogLinks, when set, is the directory of kubelet's
	// /var/log/containers links to the containers' live logs.
	LogLinks string
	// RuntimeClass resolves a pod's spec.runtimeClassName before its
	// sandbox is made, as kubelet's RuntimeClass manager: an error (see
	// RuntimeClassNotFound) keeps the pod waiting in a failed sandbox
	// step. nil: the node has no runtime class.
	RuntimeClass func(name string) error
	// Devices are the node's CDI devices, given to pods for their
	// extended resources and CDI annotations (devices.go); nil: none.
	Devices DeviceSource
	// Admit, when set, is the node's admission of a pod before it first
	// starts (the sysctls it may set).
	Admit AdmitFunc
	// VolumesDir is where the directories of PersistentVolumeClaims
	// bound to no PersistentVolume are provisioned (pvc.go; default
	// Layout.Volumes()).
	VolumesDir string
}

// Supervisor keeps the pods of the latest desired snapshot running. What
// its pod workers use is its workerDeps; the rest is its own.
type Supervisor struct {
	workerDeps
	opts Options

	// synced is set once the first snapshot is reconciled (unpublished,
	// in workerDeps, counts the workers started then that have not
	// published yet).
	synced atomic.Bool

	ownProber *probes.Manager // the default prober, closed when Run ends

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	sent    map[types.UID]*manifest.Pod // the spec last sent to each worker
	objs    Objects                     // the ConfigMaps and Secrets last sent to the workers
}

// New returns a Supervisor.
func New(opts Options) *Supervisor {
	if opts.CgroupRoot == "" {
		opts.CgroupRoot = "/sys/fs/cgroup"
	}
	if opts.CgroupParent == "" {
		opts.CgroupParent = "podvisor"
	}
	if opts.RelistPeriod == 0 {
		opts.RelistPeriod = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Sandboxes == nil {
		opts.Sandboxes = hostSandboxes{layout: opts.Layout}
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	usernsRT, _ := opts.Runtime.(UserNSRuntime)
	users, _ := opts.Runtime.(UserReporter)
	imageVolumes, _ := opts.Runtime.(ImageVolumeMounter)
	if opts.RequestTimeout > 0 {
		opts.Runtime = Bounded(opts.Runtime, opts.RequestTimeout)
		opts.Network = boundedNetwork{net: opts.Network, d: opts.RequestTimeout}
	}
	s := &Supervisor{
		workerDeps: workerDeps{
			layout:       opts.Layout,
			rt:           opts.Runtime,
			net:          opts.Network,
			status:       opts.Status,
			sandboxes:    opts.Sandboxes,
			log:          opts.Log,
			cg:           detectCgroups(opts.CgroupRoot, opts.PodPidsLimit),
			clock:        opts.Clock,
			images:       opts.Images,
			nodeName:     opts.NodeName,
			nodeIP:       opts.NodeIP,
			cgroupParent: opts.CgroupParent,
			logLinks:     opts.LogLinks,
			runtimeClass: opts.RuntimeClass,
			prober:       opts.Prober,
			runHook:      opts.Hooks,
			readDrops:    crilog.ReadDrops,
			userns:       newUsernsAllocator(hostUserNSRange()),
			usernsRT:     usernsRT,
			users:        users,
			devices:      newDevicePool(opts.Devices),
			admitPod:     opts.Admit,
			imageVolumes: imageVolumes,
			claims:       newClaimPool(cmp.Or(opts.VolumesDir, opts.Layout.Volumes())),
			// The pods' host domain (hostname.go).
			clusterDomain: opts.ClusterDomain,
		},
		opts:    opts,
		workers: map[types.UID]*podWorker{},
		sent:    map[types.UID]*manifest.Pod{},
	}
	exec := runtimeExec{rt: s.rt}
	if s.prober == nil {
		s.ownProber = probes.NewManager(probes.Options{
			Exec:     exec,
			Clock:    opts.Clock,
			OnEvent:  s.probeEvent,
			OnChange: s.probeChanged,
			OnRun:    opts.ProbeRuns,
		})
		s.prober = s.ownProber
	}
	if s.runHook == nil {
		s.runHook = func(ctx context.Context, h *v1.LifecycleHandler, t probes.Target) (string, error) {
			return probes.RunHook(ctx, h, t, probes.HookOptions{Exec: exec, Clock: opts.Clock, OnWarning: func(reason, msg string) {
				s.log.Warn("lifecycle hook", "pod", t.Namespace+"/"+t.PodName, "container", t.Container.Name, "reason", reason, "message", msg)
			}})
		}
	}
	s.oomFloor = probeOOMFloor()
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		s.machineMem = int64(si.Totalram) * int64(si.Unit)
	}
	var fs unix.Statfs_t
	if unix.Statfs(s.layout.StateDir, &fs) == nil {
		s.stateFS = int64(fs.Blocks) * fs.Bsize
	}
	return s
}

// Synced reports whether the status store holds every pod of the first
// manifests snapshot and every pod found at start: the first snapshot is
// reconciled and each of its workers has published once. Until then a pod
// missing from the store may be one not looked at yet.
func (s *Supervisor) Synced() bool {
	return s.synced.Load() && s.unpublished.Load() == 0
}

// ImagesImported tells the supervisor that new images arrived: pods
// waiting out a failed pull retry at once.
func (s *Supervisor) ImagesImported() {
	s.imageGen.Add(1)
	s.wakeAll()
}

// Run supervises until ctx ends. It never stops a pod on its way out.
func (s *Supervisor) Run(ctx context.Context, snapshots <-chan manifest.Snapshot) error {
	if s.ownProber != nil {
		defer s.ownProber.Close()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Subscribe before looking at any container, so no exit falls between.
	subscribed := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); s.watchEvents(ctx, subscribed) }()
	select {
	case <-subscribed:
	case <-ctx.Done():
		return ctx.Err()
	}

	records, left, err := s.adopt(ctx)
	if err != nil {
		return err
	}
	// Before any pod is admitted: what the pods found hold stays theirs.
	s.devices.restore(records)
	if len(left) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); s.retryLeftovers(ctx, left) }()
	}
	// Log links are pruned at start and after each pod's removal, never
	// on a timer (pruneLogLinksLoop).
	linksWanted := make(chan struct{}, 1)
	wg.Add(1)
	go func() { defer wg.Done(); s.pruneLogLinksLoop(ctx, linksWanted) }()
	wg.Add(1)
	go func() { defer wg.Done(); s.watchDrops(ctx) }()
	var last manifest.Snapshot
	select {
	case last = <-snapshots:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Before any pod is admitted too: the pods found with a sandbox hold
	// their ReadWriteOncePod claims (the snapshot tells which those are).
	s.claims.restore(records, last.Claims)
	workerDone := make(chan types.UID, 16)
	start := func(w *podWorker) {
		s.workers[w.uid] = w
		s.claims.use(w.uid, w.pod())
		if !s.synced.Load() {
			w.firstPublish = true
			s.unpublished.Add(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.published()
			w.run(ctx)
			select {
			case workerDone <- w.uid:
			case <-ctx.Done():
			}
		}()
	}
	s.reconcile(last, records, start)
	s.synced.Store(true)
	reported := s.reportManifestErrors(nil, last)
	// The ticker is made here, not in the loop's goroutine: a tick due
	// from now on is never missed.
	relist := s.clock.NewTicker(s.opts.RelistPeriod)
	wg.Add(1)
	go func() { defer wg.Done(); defer relist.Stop(); s.relistLoop(ctx, relist.C()) }()
	// Shims are collected once adoption is done (what it removed may
	// have left a shim) and after each pod's removal, never on a timer:
	// finding them walks /proc.
	shimsWanted, shimsDone := make(chan struct{}, 1), make(chan struct{})
	go s.collectShims(ctx, shimsWanted, shimsDone)
	defer func() { <-shimsDone }()
	ask(shimsWanted)
	var heartbeat <-chan time.Time
	if s.opts.Heartbeat != nil {
		hb := s.clock.NewTicker(cmp.Or(s.opts.HeartbeatPeriod, time.Second))
		defer hb.Stop()
		heartbeat = hb.C()
		s.opts.Heartbeat()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat:
			s.opts.Heartbeat()
			continue
		case snap := <-snapshots:
			last = snap
			reported = s.reportManifestErrors(reported, snap)
		case uid := <-workerDone:
			s.mu.Lock()
			if w := s.workers[uid]; w != nil {
				select {
				case <-w.done:
					delete(s.workers, uid)
					delete(s.sent, uid)
					s.devices.release(uid)
					if s.claims.release(uid) {
						// A pod may wait for the ReadWriteOncePod claim it held.
						for _, o := range s.workers {
							o.inbox.send(wakeMsg{})
						}
					}
				default:
				}
			}
			s.mu.Unlock()
			ask(shimsWanted)
			ask(linksWanted)
		}
		s.reconcile(last, records, start)
	}
}

// collectShims ends the shims no container owns any more (see
// Runtime.CollectShims) for each ask on wanted, until ctx ends; asks made
// during a round merge into one more round. It closes done as it returns.
func (s *Supervisor) collectShims(ctx context.Context, wanted <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-wanted:
		}
		killed, err := s.rt.CollectShims(ctx)
		if len(killed) > 0 {
			s.log.Info("ended what no pod owned", "what", killed)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Debug("collect shims", "err", err)
		}
	}
}

// ImageGate holds image look-ups while the images dir's start-up import
// may still bring the image in.
type ImageGate interface {
	// Wait returns once image is as the images dir has it at start, or
	// ctx's error.
	Wait(ctx context.Context, image string) error
}

// setHealth reports the runtime's reachability to the status sink when it
// tracks health (status.Store does, for /healthz).
func (s *Supervisor) setHealth(err error) {
	if h, ok := s.status.(interface{ SetHealth(error) }); ok {
		h.SetHealth(err)
	}
}

// cleanupContext returns a context for cleanup that survives the
// cancellation of ctx, bounded by a timeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// ask asks a loop that waits on wanted (capacity 1) for one more pass; an
// ask already pending covers this one.
func ask(wanted chan<- struct{}) {
	select {
	case wanted <- struct{}{}:
	default:
	}
}
