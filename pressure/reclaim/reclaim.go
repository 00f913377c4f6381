package reclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/podvisor/podvisor/internal/images"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// DefaultPeriod is how often Run checks the image filesystem (kubelet's
// ImageGCPeriod).
const DefaultPeriod = 5 * time.Minute

// Event reasons, as kubelet's where it has them.
const (
	ReasonImageGCed           = "ImageGarbageCollected"
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed" // kubelet's
	ReasonImageGCFailed       = "ImageGCFailed"       // kubelet's
)

// Container is one container the runtime holds.
type Container struct {
	ID     string
	Image  string
	PodUID string // "" when no pod owns it
}

// Runtime is what image GC needs of the container runtime.
type Runtime interface {
	// Images lists every image name with its digest, size and update.
	Images(ctx context.Context) ([]Image, error)
	// Containers lists every container, whatever its state.
	Containers(ctx context.Context) ([]Container, error)
	// RemoveImage removes name while it points at digest, freeing the
	// content nothing else holds before it returns.
	RemoveImage(ctx context.Context, name, digest string) error
}

// Options configures a Reclaimer.
type Options struct {
	Runtime Runtime
	Policy  Policy
	// ImageFS is a directory on the image filesystem (containerd's
	// snapshotter root); "" turns threshold GC off (ReclaimImages and
	// MaxAge still work).
	ImageFS string
	// Period of Run's check; 0 is DefaultPeriod.
	Period time.Duration
	// UsageFile keeps images' last use across restarts; "": memory only.
	UsageFile string
	// ImagesReady is closed once the images dir's first pass is done
	// (nil: no images dir).
	ImagesReady <-chan struct{}
	// Logs are the log directory and rotation limit whose leftovers
	// ReclaimContainers and SweepLogs remove; RecordsDir holds one
	// directory per pod podvisor still owns (layout.Records).
	LogDir      string
	LogMaxFiles int
	RecordsDir  string
	// Event records a node event (type, reason, message); nil: none.
	Event func(typ, reason, msg string)
	Log   *slog.Logger
	Clock clock.WithTicker
	// DiskUsage returns a filesystem's capacity and available bytes;
	// nil is statfs.
	DiskUsage func(path string) (capacity, available uint64, err error)
}

// Reclaimer collects unused images and dead containers' leftovers.
type Reclaimer struct {
	o       Options
	started time.Time

	// pass serializes passes (GarbageCollect, ReclaimImages) and guards
	// failing; mu guards the pins and last uses, and is never held over
	// a runtime call, so a snapshot's pins never wait for a pass.
	pass    sync.Mutex
	failing string // the reason of the failure told, "" when none

	mu       sync.Mutex
	snapshot bool // a first snapshot was seen
	named    map[string]bool
	podUIDs  map[string]bool
	imported map[string]bool
	running  map[string]bool // container images at the last pass
	use      *usage

	gone chan struct{} // buffer 1: a pod was removed
}

// New returns a Reclaimer; Run starts its periodic check.
func New(o Options) *Reclaimer {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.DiskUsage == nil {
		o.DiskUsage = statfs
	}
	u, err := loadUsage(o.UsageFile)
	if err != nil {
		o.Log.Warn("image last use unknown; unused images are collected oldest first", "err", err)
	}
	return &Reclaimer{o: o, started: o.Clock.Now(), named: map[string]bool{}, podUIDs: map[string]bool{},
		imported: map[string]bool{}, running: map[string]bool{}, use: u, gone: make(chan struct{}, 1)}
}

// SetPods tells the pods of a manifests snapshot (the last-known-good
// spec of a broken manifest included): their images (containers' and
// image volumes') are pinned, and
// images no pod names any more stop being used now.
func (r *Reclaimer) SetPods(pods []*v1.Pod) {
	named := map[string]bool{}
	uids := map[string]bool{}
	for _, p := range pods {
		uids[string(p.UID)] = true
		for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range cs {
				for _, k := range imageKeys(c.Image) {
					named[k] = true
				}
			}
		}
		for _, c := range p.Spec.EphemeralContainers {
			for _, k := range imageKeys(c.Image) {
				named[k] = true
			}
		}
		for _, v := range p.Spec.Volumes {
			if v.Image != nil {
				for _, k := range imageKeys(v.Image.Reference) {
					named[k] = true
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapshot, r.named, r.podUIDs = true, named, uids
	r.observeLocked(nil)
}

// PodRemoved tells that a pod is gone (stopped and cleaned up): Run
// sweeps the log dir.
func (r *Reclaimer) PodRemoved() {
	select {
	case r.gone <- struct{}{}:
	default:
	}
}

// Imported pins names, images the images dir imported (or found already
// imported) from its archives.
func (r *Reclaimer) Imported(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		for _, k := range imageKeys(n) {
			r.imported[k] = true
		}
	}
}

// imageKeys are the keys an image reference pins: its name as containerd
// stores it and, given by digest, that digest.
func imageKeys(image string) []string {
	name, err := images.Normalize(image)
	if err != nil {
		return []string{image}
	}
	keys := []string{name}
	if named, err := reference.ParseNormalizedNamed(name); err == nil {
		if d, ok := named.(reference.Digested); ok {
			keys = append(keys, d.Digest().String())
		}
	}
	return keys
}

// Ready reports whether pins are known: a snapshot was seen and the
// images dir's first pass is done.
func (r *Reclaimer) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readyLocked()
}

func (r *Reclaimer) readyLocked() bool {
	if !r.snapshot {
		return false
	}
	if r.o.ImagesReady == nil {
		return true
	}
	select {
	case <-r.o.ImagesReady:
		return true
	default:
		return false
	}
}

// pinSet is the pins at one pass.
type pinSet struct{ r *Reclaimer }

func (p pinSet) pinnedName(n string) bool {
	return p.r.named[n] || p.r.imported[n] || p.r.running[n]
}
func (p pinSet) pinnedDigest(d string) bool { return p.pinnedName(d) }

// inUse is the keys in use: named by a pod or by a container.
func (r *Reclaimer) inUse() map[string]bool {
	m := make(map[string]bool, len(r.named)+len(r.running))
	for k := range r.named {
		m[k] = true
	}
	for k := range r.running {
		m[k] = true
	}
	return m
}

// observeLocked records what is in use now; present, when known, lets it
// forget images gone. It saves the state when it changed.
func (r *Reclaimer) observeLocked(present map[string]bool) {
	if r.use.observe(r.inUse(), present, r.o.Clock.Now()) {
		if err := r.use.save(); err != nil {
			r.o.Log.Warn("image last use not saved", "err", err)
		}
	}
}

// refresh lists images and containers, updating the running pins and
// last uses, and returns the unpinned groups in removal order.
func (r *Reclaimer) refresh(ctx context.Context) ([]group, error) {
	ctrs, err := r.o.Runtime.Containers(ctx)
	if err != nil {
		return nil, err
	}
	imgs, err := r.o.Runtime.Images(ctx)
	if err != nil {
		return nil, err
	}
	running := map[string]bool{}
	for _, c := range ctrs {
		for _, k := range imageKeys(c.Image) {
			running[k] = true
		}
	}
	// A container's image by name pins the digest that name has now.
	present := map[string]bool{}
	for _, i := range imgs {
		present[i.Name], present[i.Digest] = true, true
		if running[i.Name] {
			running[i.Digest] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running = running
	r.observeLocked(present)
	return groups(imgs, pinSet{r}, r.use.lastUsed(r.o.Clock.Now())), nil
}

// pinnedNow reports whether a group planned for removal got pinned since
// (a snapshot naming it arrived during the pass).
func (r *Reclaimer) pinnedNow(g group) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := pinSet{r}
	if p.pinnedDigest(g.Digest) {
		return true
	}
	for _, n := range g.Names {
		if p.pinnedName(n) {
			return true
		}
	}
	return false
}

// remove removes the groups' names, logging and recording each
// removal; it returns the bytes freed.
func (r *Reclaimer) remove(ctx context.Context, gs []group, why string) (uint64, error) {
	var freed uint64
	var errs []error
	for _, g := range gs {
		if r.pinnedNow(g) {
			continue
		}
		var gerr error
		for _, n := range g.Names {
			if err := r.o.Runtime.RemoveImage(ctx, n, g.Digest); err != nil {
				gerr = err
				break
			}
		}
		if gerr != nil {
			errs = append(errs, gerr)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		freed += g.Size
		last := "never"
		if !g.LastUsed.IsZero() {
			last = g.LastUsed.UTC().Format(time.RFC3339)
		}
		r.o.Log.Info("image garbage collected", "image", strings.Join(g.Names, ","), "digest", g.Digest, "bytes", g.Size, "lastUsed", last, "why", why)
		r.event(v1.EventTypeNormal, ReasonImageGCed, fmt.Sprintf("Removed unused image %s (%s, %d bytes, last used %s): %s", strings.Join(g.Names, ", "), g.Digest, g.Size, last, why))
	}
	return freed, errors.Join(errs...)
}

func (r *Reclaimer) event(typ, reason, msg string) {
	if r.o.Event != nil {
		r.o.Event(typ, reason, msg)
	}
}

// fail tells a failure once per episode (a pass that succeeds ends
// it): a box that stays full must not write an event every period.
func (r *Reclaimer) fail(reason string, err error) {
	if r.failing == reason {
		r.o.Log.Debug("image garbage collection still failing", "reason", reason, "err", err)
		return
	}
	r.failing = reason
	r.o.Log.Warn("image garbage collection failed", "reason", reason, "err", err)
	r.event(v1.EventTypeWarning, reason, err.Error())
}

// ReclaimImages removes unused, unpinned images, oldest last use first,
// until at least bytes are freed (0: every one eligible, as the pressure
// manager asks for an inodes signal), and returns what it freed. Before
// Ready it frees nothing.
func (r *Reclaimer) ReclaimImages(ctx context.Context, bytes uint64) (uint64, error) {
	r.pass.Lock()
	defer r.pass.Unlock()
	if !r.Ready() {
		return 0, nil
	}
	if bytes == 0 {
		bytes = math.MaxUint64
	}
	return r.free(ctx, bytes, "the node-pressure manager asked for space")
}

func (r *Reclaimer) free(ctx context.Context, bytes uint64, why string) (uint64, error) {
	gs, err := r.refresh(ctx)
	if err != nil {
		return 0, fmt.Errorf("image garbage collection: %w", err)
	}
	return r.remove(ctx, r.o.Policy.plan(gs, r.o.Clock.Now(), bytes), why)
}

// GarbageCollect runs one pass of image GC: images unused beyond MaxAge,
// then, with the image filesystem at or above the high threshold,
// images until it is at the low one.
func (r *Reclaimer) GarbageCollect(ctx context.Context) error {
	r.pass.Lock()
	defer r.pass.Unlock()
	if !r.Ready() {
		return nil
	}
	var want uint64
	var capacity, available uint64
	if r.o.ImageFS != "" {
		var err error
		capacity, available, err = r.o.DiskUsage(r.o.ImageFS)
		if err != nil {
			err = fmt.Errorf("image filesystem %s: %w", r.o.ImageFS, err)
			r.fail(ReasonImageGCFailed, err)
			return err
		}
		want = r.o.Policy.toFree(capacity, available)
	}
	if want == 0 && r.o.Policy.MaxAge <= 0 {
		r.failing = ""
		return nil
	}
	gs, err := r.refresh(ctx)
	if err != nil {
		err = fmt.Errorf("image garbage collection: %w", err)
		r.fail(ReasonImageGCFailed, err)
		return err
	}
	now := r.o.Clock.Now()
	var freed uint64
	var errs []error
	if old := r.o.Policy.expired(gs, now, r.started); len(old) > 0 {
		n, err := r.remove(ctx, old, fmt.Sprintf("unused for more than %s", r.o.Policy.MaxAge))
		freed += n
		errs = append(errs, err)
		if gs, err = r.refresh(ctx); err != nil {
			errs = append(errs, err)
			gs = nil
		}
	}
	if want > freed {
		usage := 100 - int(min(available, capacity)*100/capacity)
		r.o.Log.Info("image filesystem above the high threshold; freeing space", "path", r.o.ImageFS, "usage", usage, "high", r.o.Policy.HighThresholdPercent, "bytes", want-freed)
		n, err := r.remove(ctx, r.o.Policy.plan(gs, now, want-freed),
			fmt.Sprintf("image filesystem at %d%%, above the high threshold %d%%", usage, r.o.Policy.HighThresholdPercent))
		freed += n
		errs = append(errs, err)
		if freed < want {
			err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", want, freed)
			r.fail(ReasonFreeDiskSpaceFailed, err)
			return errors.Join(append(errs, err)...)
		}
	}
	if err := errors.Join(errs...); err != nil {
		r.fail(ReasonImageGCFailed, err)
		return err
	}
	r.failing = ""
	return nil
}

// Run checks the image filesystem every Period (and once at Ready) until
// ctx ends, and sweeps the log dir once Ready and after PodRemoved.
// synced reports when every pod found at start is known (the
// supervisor's Synced); no log directory is swept before.
func (r *Reclaimer) Run(ctx context.Context, synced func() bool) {
	t := r.o.Clock.NewTicker(r.o.Period)
	defer t.Stop()
	// Until pins are known, check again each second (bounded by ctx).
	wait := r.o.Clock.NewTicker(time.Second)
	defer wait.Stop()
	for !r.Ready() || (synced != nil && !synced()) {
		select {
		case <-ctx.Done():
			return
		case <-wait.C():
		}
	}
	wait.Stop()
	r.SweepLogs(ctx)
	r.GarbageCollect(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			r.GarbageCollect(ctx)
		case <-r.gone:
			r.SweepLogs(ctx)
		}
	}
}

// ReclaimContainers removes what dead containers leave: podvisor removes
// each container once its exit is recorded (its status keeps it), so
// what is left is their logs beyond the rotation limit and the log
// directories of pods gone. The pressure manager calls it first.
func (r *Reclaimer) ReclaimContainers(ctx context.Context) error {
	if !r.Ready() {
		return nil
	}
	return r.SweepLogs(ctx)
}

// statfs is the filesystem's capacity and space available to others
// than root (df's).
func statfs(path string) (uint64, uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil
}
