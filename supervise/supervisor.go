package supervise

import (
	"context"
	"errors"
	"fmt"
	"github.com/podvisor/podvisor/internal/nsfs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"
	"github.com/podvisor/podvisor/cni"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Network is what the supervisor needs from the cni package.
type Network interface {
	Add(ctx context.Context, id, netns string, pod cni.PodRef, ports []cni.PortMapping) (*cni.Result, error)
	Del(ctx context.Context, id, netns string, pod cni.PodRef, ports []cni.PortMapping) error
	GC(ctx context.Context, keep map[string]bool) ([]string, error)
}

// StatusSink receives pod status and events (status.Store implements it).
type StatusSink interface {
	SetPod(pod *v1.Pod)
	DeletePod(uid types.UID)
	Eventf(pod *v1.Pod, fieldPath, eventType, reason, format string, args ...any)
	NodeEventf(node, eventType, reason, format string, args ...any)
}

var (
	_ Network    = (*cni.Manager)(nil)
	_ StatusSink = (*status.Store)(nil)
)

// Config is the supervisor's configuration.
type Config struct {
	StateDir  string
	RunDir    string
	LogDir    string
	ImagesDir string
	NodeName  string
	NodeIP    string
	// Namespace is the containerd namespace podvisor owns.
	Namespace string
	// Snapshotter defaults to overlayfs.
	Snapshotter string
	// LogDriver is the binary the shims run to write container logs;
	// podvisor's own executable ("podvisor log-driver").
	LogDriver  string
	LogMaxSize int64
	// CgroupRoot (default /sys/fs/cgroup) and CgroupParent (default: the
	// containerd namespace, "podvisor"): pod cgroups are <parent>/pod<uid>.
	CgroupRoot   string
	CgroupParent string
	// RelistPeriod is how often every worker re-checks its containers as a
	// safety net for missed events (default 10s).
	RelistPeriod time.Duration
	// PullTimeout bounds a registry pull (default 30s).
	PullTimeout time.Duration
}

// Supervisor keeps the pods of the latest desired snapshot running.
type Supervisor struct {
	cfg    Config
	client *containerd.Client
	rt     *runtime
	net    Network
	store  StatusSink
	log    *slog.Logger
	cg     cgroups
	now    func() time.Time

	// imageGen counts image imports, so a pod waiting out a failed pull
	// retries at once when new images arrive.
	imageGen    atomic.Int64
	oomFloor    int // lowest oom_score_adj this host accepts (0 or -1000)
	machineMem  int64
	imagesReady chan struct{}

	mu          sync.Mutex
	workers     map[types.UID]*podWorker
	byContainer map[string]*podWorker
}

// New returns a Supervisor using the given containerd client (with
// cfg.Namespace as its default namespace), network and status sink.
func New(cfg Config, client *containerd.Client, net Network, store StatusSink, log *slog.Logger) *Supervisor {
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = "overlayfs"
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/sys/fs/cgroup"
	}
	if cfg.CgroupParent == "" {
		// One parent per containerd namespace: two podvisors on one host
		// (in different namespaces) never touch each other's cgroups.
		cfg.CgroupParent = cfg.Namespace
	}
	if cfg.RelistPeriod == 0 {
		cfg.RelistPeriod = 10 * time.Second
	}
	if cfg.PullTimeout == 0 {
		cfg.PullTimeout = 30 * time.Second
	}
	s := &Supervisor{
		cfg:    cfg,
		client: client,
		rt: &runtime{
			client:      client,
			snapshotter: cfg.Snapshotter,
			logDriver:   cfg.LogDriver,
			logMaxSize:  cfg.LogMaxSize,
			pullTimeout: cfg.PullTimeout,
		},
		net:         net,
		store:       store,
		log:         log,
		cg:          detectCgroups(cfg.CgroupRoot),
		now:         time.Now,
		imagesReady: make(chan struct{}),
		workers:     map[types.UID]*podWorker{},
		byContainer: map[string]*podWorker{},
	}
	s.oomFloor = probeOOMFloor()
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		s.machineMem = int64(si.Totalram) * int64(si.Unit)
	}
	return s
}

// Run supervises until ctx ends. It never stops a pod on its way out.
func (s *Supervisor) Run(ctx context.Context, snapshots <-chan manifest.Snapshot) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Subscribe before looking at any task, so no exit falls between.
	subscribed := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); s.watchEvents(ctx, subscribed) }()
	select {
	case <-subscribed:
	case <-ctx.Done():
		return ctx.Err()
	}

	wg.Add(1)
	go func() { defer wg.Done(); s.watchImages(ctx) }()

	records, errs := loadRecords(s.cfg.StateDir)
	for _, err := range errs {
		s.log.Error("pod record unreadable; its pod will be rebuilt from containerd labels", "err", err)
	}
	live, err := s.rt.podContainers(ctx)
	if err != nil {
		return err
	}
	for uid, ctrs := range live {
		r, ok := records[types.UID(uid)]
		if !ok {
			records[types.UID(uid)] = recordFromLabels(ctx, s.cfg.RunDir, ctrs)
			continue
		}
		// A labelled container its record does not name is left from a
		// crash in the middle of a start: it must not run beside the one
		// the record knows.
		known := map[string]bool{}
		for _, cr := range r.Init {
			known[cr.ID] = true
		}
		for _, cr := range r.Apps {
			known[cr.ID] = true
		}
		for _, c := range ctrs {
			if !known[c.ID()] {
				s.log.Warn("removing a container no pod record names", "container", c.ID(), "uid", uid)
				s.rt.stop(ctx, c.ID(), syscall.SIGKILL, 0)
				s.rt.remove(ctx, c.ID())
			}
		}
	}
	s.sweepSandboxes(records)
	// Leaked CNI attachments: any whose sandbox no record knows.
	keep := map[string]bool{}
	for _, r := range records {
		if r.Sandbox != nil {
			keep[r.Sandbox.ID] = true
		}
	}
	if removed, err := s.net.GC(ctx, keep); err != nil {
		s.log.Warn("collect leaked network attachments", "err", err)
	} else if len(removed) > 0 {
		s.log.Info("released leaked network attachments", "sandboxes", removed)
	}

	var last manifest.Snapshot
	select {
	case last = <-snapshots:
	case <-ctx.Done():
		return ctx.Err()
	}
	workerDone := make(chan types.UID, 16)
	start := func(w *podWorker) {
		s.workers[w.uid] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx)
			select {
			case workerDone <- w.uid:
			case <-ctx.Done():
			}
		}()
	}
	s.reconcile(last, records, start)
	reported := s.reportManifestErrors(nil, last)
	relist := time.NewTicker(s.cfg.RelistPeriod)
	defer relist.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case snap := <-snapshots:
			last = snap
			reported = s.reportManifestErrors(reported, snap)
		case uid := <-workerDone:
			s.mu.Lock()
			if w := s.workers[uid]; w != nil {
				select {
				case <-w.done:
					delete(s.workers, uid)
				default:
				}
			}
			s.mu.Unlock()
		case <-relist.C:
			s.wakeAll()
			continue
		}
		s.reconcile(last, records, start)
	}
}

// reconcile starts workers for new pods, updates existing ones and asks
// workers of pods no longer desired to stop. A pod that replaces another of
// the same name starts only once the old one is gone, as kubelet does for
// static pods. records holds pods found at start-up not yet claimed.
func (s *Supervisor) reconcile(snap manifest.Snapshot, records map[types.UID]*podRecord, start func(*podWorker)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[types.UID]*manifest.Pod{}
	for _, p := range snap.Pods {
		want[p.Pod.UID] = p
	}
	busyNames := map[string]bool{}
	for uid, w := range s.workers {
		if _, ok := want[uid]; !ok {
			w.requestStop()
		}
		if p := w.pod(); p != nil {
			busyNames[p.Namespace+"/"+p.Name] = true
		}
	}
	for uid, r := range records {
		if _, ok := want[uid]; ok {
			continue
		}
		// Found at start-up but no longer desired: adopt it to stop it.
		w := newPodWorker(s, uid, nil, r)
		w.stopReq = true
		delete(records, uid)
		start(w)
		busyNames[r.fullName()] = true
	}
	for uid, p := range want {
		if w, ok := s.workers[uid]; ok {
			w.update(p)
			continue
		}
		if busyNames[p.Pod.Namespace+"/"+p.Pod.Name] {
			continue
		}
		w := newPodWorker(s, uid, p, records[uid])
		delete(records, uid)
		start(w)
	}
}

func (s *Supervisor) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		w.wake()
	}
}

func (s *Supervisor) track(id string, w *podWorker) {
	s.mu.Lock()
	s.byContainer[id] = w
	s.mu.Unlock()
}

func (s *Supervisor) untrack(id string) {
	s.mu.Lock()
	delete(s.byContainer, id)
	s.mu.Unlock()
}

func (s *Supervisor) owner(id string) *podWorker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byContainer[id]
}

// watchEvents follows containerd's task exit and OOM events and wakes the
// owning worker. When the stream breaks (containerd restarting) it
// resubscribes and wakes every worker, since exits may have been missed.
func (s *Supervisor) watchEvents(ctx context.Context, subscribed chan<- struct{}) {
	filters := []string{
		fmt.Sprintf(`namespace==%q,topic=="/tasks/exit"`, s.cfg.Namespace),
		fmt.Sprintf(`namespace==%q,topic=="/tasks/oom"`, s.cfg.Namespace),
	}
	first := true
	for {
		sctx, cancel := context.WithCancel(ctx)
		ch, errs := s.client.Subscribe(sctx, filters...)
		if first {
			close(subscribed)
			first = false
		} else {
			s.wakeAll()
		}
		s.setHealth(nil)
	loop:
		for {
			select {
			case env := <-ch:
				s.handleEvent(env.Event)
			case err := <-errs:
				if ctx.Err() == nil {
					s.log.Warn("containerd event stream broke; resubscribing", "err", err)
					s.setHealth(fmt.Errorf("containerd event stream: %w", err))
				}
				break loop
			case <-ctx.Done():
				break loop
			}
		}
		cancel()
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (s *Supervisor) handleEvent(any typeurl.Any) {
	if any == nil {
		return
	}
	ev, err := typeurl.UnmarshalAny(any)
	if err != nil {
		return
	}
	switch e := ev.(type) {
	case *apievents.TaskExit:
		if e.ID != e.ContainerID {
			return // an exec process, not the container's init
		}
		if w := s.owner(e.ContainerID); w != nil {
			w.wake()
		}
	case *apievents.TaskOOM:
		if w := s.owner(e.ContainerID); w != nil {
			w.markOOM(e.ContainerID)
		}
	}
}

// ensureImage waits for the start-up import of the images dir, then finds
// the container's image.
func (s *Supervisor) ensureImage(ctx context.Context, c *v1.Container) (*imageResult, error) {
	select {
	case <-s.imagesReady:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.rt.ensureImage(ctx, c)
}

// stopSignal is the image's StopSignal, else SIGTERM.
func (s *Supervisor) stopSignal(ctx context.Context, c *v1.Container) syscall.Signal {
	ref, err := normalizeImage(c.Image)
	if err != nil {
		return syscall.SIGTERM
	}
	img, err := s.client.GetImage(ctx, ref)
	if err != nil {
		return syscall.SIGTERM
	}
	spec, err := img.Spec(ctx)
	if err != nil {
		return syscall.SIGTERM
	}
	return stopSignal(spec.Config.StopSignal)
}

// oomScoreAdj computes kubelet's OOM score for the container, raised to
// what this host accepts (nested and rootless hosts refuse negative values),
// with a warning when it had to be raised.
func (s *Supervisor) oomScoreAdj(pod *v1.Pod, c *v1.Container) (int, string) {
	critical := pod.Spec.PriorityClassName == "system-node-critical" || pod.Spec.PriorityClassName == "system-cluster-critical"
	adj := oomScoreAdj(status.QOSClass(&pod.Spec), c.Resources.Requests.Memory().Value(), s.machineMem, critical)
	if adj < s.oomFloor {
		return s.oomFloor, fmt.Sprintf("this host refuses oom_score_adj %d; using %d", adj, s.oomFloor)
	}
	return adj, ""
}

// probeOOMFloor finds whether this process may lower an oom_score_adj:
// it tries on itself and restores the old value.
func probeOOMFloor() int {
	const p = "/proc/self/oom_score_adj"
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	orig, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	if orig < 0 {
		return -1000
	}
	if err := os.WriteFile(p, []byte("-1"), 0o644); err != nil {
		return orig
	}
	os.WriteFile(p, []byte(strconv.Itoa(orig)), 0o644)
	return -1000
}

// removePodContainers kills and removes every containerd container labelled
// with the pod's UID.
func (s *Supervisor) removePodContainers(ctx context.Context, uid types.UID) error {
	all, err := s.rt.podContainers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range all[string(uid)] {
		if err := s.rt.stop(ctx, c.ID(), syscall.SIGKILL, 0); err != nil {
			errs = append(errs, err)
		}
		if err := s.rt.remove(ctx, c.ID()); err != nil {
			errs = append(errs, err)
		}
		s.untrack(c.ID())
	}
	return errors.Join(errs...)
}

// recordFromLabels rebuilds a minimal record for containers whose pod has no
// record (lost state dir); enough to adopt them or stop them.
func recordFromLabels(ctx context.Context, runDir string, ctrs []containerd.Container) *podRecord {
	r := &podRecord{Init: map[string]*containerRecord{}, Apps: map[string]*containerRecord{}}
	sandboxID := ""
	for _, c := range ctrs {
		info, err := c.Info(ctx)
		if err != nil {
			continue
		}
		l := info.Labels
		r.UID, r.Namespace, r.Name = types.UID(l[labelPodUID]), l[labelPodNamespace], l[labelPodName]
		n, _ := strconv.Atoi(l[labelRestartCount])
		cr := &containerRecord{ID: c.ID(), RestartCount: int32(n), StartedAt: info.CreatedAt}
		if l[labelContainerType] == containerTypeInit {
			r.Init[l[labelContainer]] = cr
		} else {
			r.Apps[l[labelContainer]] = cr
		}
		if r.Created.IsZero() || info.CreatedAt.Before(r.Created) {
			r.Created = info.CreatedAt
		}
		if id := l[labelSandboxID]; id != "" {
			sandboxID = id
		}
	}
	// Running app containers mean the init containers completed.
	if len(r.Apps) > 0 {
		for _, cr := range r.Init {
			cr.Done = true
		}
	}
	// The sandbox's namespaces live at known places under the run dir; its
	// network was attached (its IPs are not known any more).
	if sandboxID != "" {
		dir := filepath.Join(runDir, "pods", sandboxID)
		sb := &sandboxRecord{ID: sandboxID, Network: true}
		if p := filepath.Join(dir, "net"); cni.IsNetNS(p) {
			sb.NetNS = p
		}
		if p := filepath.Join(dir, "ipc"); nsfs.Is(p) {
			sb.IPCNS = p
		}
		if p := filepath.Join(dir, "shm"); isMountPoint(p) {
			sb.Shm = p
		}
		r.Sandbox = sb
	}
	// Without its spec the pod cannot be stopped gracefully container by
	// container; a placeholder spec lets the worker stop and remove it.
	r.Pod = &v1.Pod{}
	r.Pod.UID, r.Pod.Namespace, r.Pod.Name = r.UID, r.Namespace, r.Name
	for name := range r.Init {
		r.Pod.Spec.InitContainers = append(r.Pod.Spec.InitContainers, v1.Container{Name: name})
	}
	for name := range r.Apps {
		r.Pod.Spec.Containers = append(r.Pod.Spec.Containers, v1.Container{Name: name})
	}
	return r
}

// setHealth reports containerd's reachability to the status sink when it
// tracks health (status.Store does, for /healthz).
func (s *Supervisor) setHealth(err error) {
	if h, ok := s.store.(interface{ SetHealth(error) }); ok {
		h.SetHealth(err)
	}
}

// reportManifestErrors turns each manifest error or warning (an insecure
// permission, say) not reported before into a Warning event: about the pod whose last good version keeps running
// from that file, or about the node when the file yields no pod. It
// returns the errors now reported.
func (s *Supervisor) reportManifestErrors(before map[string]bool, snap manifest.Snapshot) map[string]bool {
	now := map[string]bool{}
	for _, w := range snap.Warnings {
		msg := w.Error()
		now[msg] = true
		if !before[msg] {
			s.store.NodeEventf(s.cfg.NodeName, v1.EventTypeWarning, "ManifestWarning", "%s", msg)
		}
	}
	for _, e := range snap.Errors {
		msg := e.Error()
		now[msg] = true
		if before[msg] {
			continue
		}
		reported := false
		for _, p := range snap.Pods {
			if p.Path == e.Path && p.Err != nil {
				s.store.Eventf(p.Pod, "", v1.EventTypeWarning, "InvalidManifest", "%s (the last good version keeps running)", msg)
				reported = true
			}
		}
		if !reported {
			s.store.NodeEventf(s.cfg.NodeName, v1.EventTypeWarning, "InvalidManifest", "%s", msg)
		}
	}
	return now
}

// sweepSandboxes removes sandbox directories under the run dir that no pod
// record names: left by a podvisor that died between making a sandbox and
// recording it.
func (s *Supervisor) sweepSandboxes(records map[types.UID]*podRecord) {
	known := map[string]bool{}
	for _, r := range records {
		if r.Sandbox != nil {
			known[r.Sandbox.ID] = true
		}
	}
	dir := filepath.Join(s.cfg.RunDir, "pods")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if known[e.Name()] {
			continue
		}
		p := filepath.Join(dir, e.Name())
		s.log.Warn("removing a sandbox no pod record names", "sandbox", e.Name())
		nsfs.Remove(filepath.Join(p, "net"))
		nsfs.Remove(filepath.Join(p, "ipc"))
		unix.Unmount(filepath.Join(p, "shm"), unix.MNT_DETACH)
		if !isMountPoint(filepath.Join(p, "shm")) {
			os.RemoveAll(p)
		}
	}
	// Pod cgroups of pods no record names (only empty ones can go).
	for _, parent := range s.cg.dirs(s.cfg.CgroupParent) {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			uid, ok := strings.CutPrefix(e.Name(), "pod")
			if !ok || !e.IsDir() {
				continue
			}
			if _, known := records[types.UID(uid)]; !known {
				removeCgroupTree(filepath.Join(parent, e.Name()))
			}
		}
	}
}
