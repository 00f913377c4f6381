package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/podvisor/podvisor/internal/images"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/pressure"
	"github.com/podvisor/podvisor/pressure/reclaim"
	"github.com/podvisor/podvisor/status"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func init() {
	percent := func(v int) error {
		if v < 0 || v > 100 {
			return fmt.Errorf("%d: a percentage, 0 to 100", v)
		}
		return nil
	}
	fieldChecks["image-gc-high-threshold"] = func(c *Config) error { return percent(c.ImageGCHighThreshold) }
	fieldChecks["image-gc-low-threshold"] = func(c *Config) error {
		if err := percent(c.ImageGCLowThreshold); err != nil {
			return err
		}
		if c.ImageGCLowThreshold > c.ImageGCHighThreshold {
			return fmt.Errorf("%d: above --image-gc-high-threshold (%d)", c.ImageGCLowThreshold, c.ImageGCHighThreshold)
		}
		return nil
	}
	fieldChecks["image-minimum-gc-age"] = func(c *Config) error {
		if c.ImageMinimumGCAge < 0 {
			return fmt.Errorf("%s: must not be negative", c.ImageMinimumGCAge)
		}
		return nil
	}
	fieldChecks["image-maximum-gc-age"] = func(c *Config) error {
		switch {
		case c.ImageMaximumGCAge < 0:
			return fmt.Errorf("%s: must not be negative (0: off)", c.ImageMaximumGCAge)
		case c.ImageMaximumGCAge > 0 && c.ImageMaximumGCAge < c.ImageMinimumGCAge:
			return fmt.Errorf("%s: below --image-minimum-gc-age (%s)", c.ImageMaximumGCAge, c.ImageMinimumGCAge)
		}
		return nil
	}
}

// imageGCPolicy is the image GC policy of a validated configuration.
func (c *Config) imageGCPolicy() reclaim.Policy {
	return reclaim.Policy{
		HighThresholdPercent: c.ImageGCHighThreshold,
		LowThresholdPercent:  c.ImageGCLowThreshold,
		MinAge:               c.ImageMinimumGCAge,
		MaxAge:               c.ImageMaximumGCAge,
	}
}

// reclaimRef is the Reclaimer for the parts built before it (the manifest
// source's observer, the images watcher's importer): they run only once
// every part is built, and until it is set nothing is pinned or tracked.
type reclaimRef struct {
	p atomic.Pointer[reclaim.Reclaimer]
}

// ObserveSnapshot pins the images of the snapshot's pods, last-known-good
// specs included, before the supervisor sees them.
func (r *reclaimRef) ObserveSnapshot(s manifest.Snapshot) {
	rec := r.p.Load()
	if rec == nil {
		return
	}
	pods := make([]*v1.Pod, 0, len(s.Pods))
	for _, p := range s.Pods {
		pods = append(pods, p.Pod)
	}
	rec.SetPods(pods)
}

// ReclaimContainers is the Reclaimer's, nothing before it is set: the
// pressure manager reclaims through it.
func (r *reclaimRef) ReclaimContainers(ctx context.Context) error {
	if rec := r.p.Load(); rec != nil {
		return rec.ReclaimContainers(ctx)
	}
	return nil
}

// ReclaimImages is the Reclaimer's, nothing before it is set.
func (r *reclaimRef) ReclaimImages(ctx context.Context, bytes uint64) (uint64, error) {
	if rec := r.p.Load(); rec != nil {
		return rec.ReclaimImages(ctx, bytes)
	}
	return 0, nil
}

var _ pressure.Reclaimer = (*reclaimRef)(nil)

// pinImported pins what the images dir imported or, at start, found
// already imported (it asks the digests of exactly its archives' images).
func (r *reclaimRef) pinImported(names []string) {
	if rec := r.p.Load(); rec != nil {
		rec.Imported(names)
	}
}

// importer is next, pinning the images of every archive imported.
func (r *reclaimRef) importer(next images.Importer) images.Importer {
	return pinningImporter{next: next, pin: r.pinImported}
}

// digests is next, pinning every image asked about: the images dir asks
// only about its archives' images.
func (r *reclaimRef) digests(next func(context.Context, []string) (map[string]string, error)) func(context.Context, []string) (map[string]string, error) {
	return func(ctx context.Context, names []string) (map[string]string, error) {
		r.pinImported(names)
		return next(ctx, names)
	}
}

type pinningImporter struct {
	next images.Importer
	pin  func([]string)
}

func (p pinningImporter) Import(ctx context.Context, name string, archive io.Reader) ([]string, error) {
	names, err := p.next.Import(ctx, name, archive)
	p.pin(names)
	return names, err
}

// observers tells each observer of a snapshot in turn.
type observers []manifest.Observer

func (o observers) ObserveSnapshot(s manifest.Snapshot) {
	for _, x := range o {
		x.ObserveSnapshot(s)
	}
}

// newReclaimer builds image GC and the log sweeper on the runtime, with
// the image filesystem containerd reports (without one, thresholds are
// off: the pressure manager's requests and --image-maximum-gc-age still
// work). Removals and failures are node events on sink.
func (d *daemon) newReclaimer(ctx context.Context, rt *ctrd.Runtime, imgs *images.Watcher, sink interface{ Record(status.Event) }) *reclaim.Reclaimer {
	fsPath := d.imageFS(ctx, rt)
	if fsPath == "" {
		d.log.Warn("image filesystem unknown: image GC by --image-gc-high-threshold is off")
	} else {
		d.log.Info("image garbage collection", "imagefs", fsPath, "high", d.c.ImageGCHighThreshold, "low", d.c.ImageGCLowThreshold)
	}
	return reclaim.New(reclaim.Options{
		Runtime:     reclaimRuntime{rt},
		Policy:      d.c.imageGCPolicy(),
		ImageFS:     fsPath,
		UsageFile:   filepath.Join(d.paths.StateDir, "images", "last-used.json"),
		ImagesReady: imgs.Ready(),
		LogDir:      d.c.LogDir,
		LogMaxFiles: d.c.ContainerLogMaxFiles,
		RecordsDir:  d.paths.Records(),
		Log:         d.log.With("component", "reclaim"),
		Event: func(typ, reason, msg string) {
			sink.Record(status.Event{Node: d.node, Type: typ, Reason: reason, Message: msg})
		},
	})
}

// reclaimRuntime is the containerd runtime as image GC sees it.
type reclaimRuntime struct{ rt *ctrd.Runtime }

func (r reclaimRuntime) Images(ctx context.Context) ([]reclaim.Image, error) {
	imgs, err := r.rt.StoredImages(ctx)
	out := make([]reclaim.Image, 0, len(imgs))
	for _, i := range imgs {
		out = append(out, reclaim.Image{Name: i.Name, Digest: i.Digest, Size: i.Size, Updated: i.Updated})
	}
	return out, err
}

func (r reclaimRuntime) Containers(ctx context.Context) ([]reclaim.Container, error) {
	ctrs, err := r.rt.Containers(ctx)
	out := make([]reclaim.Container, 0, len(ctrs))
	for _, c := range ctrs {
		out = append(out, reclaim.Container{ID: c.ID, Image: c.Image, PodUID: c.PodUID})
	}
	if err != nil {
		return out, err
	}
	// A mounted image volume uses its image as a container does, until its
	// pod is gone.
	views, err := r.rt.ImageVolumeViews(ctx)
	for _, v := range views {
		out = append(out, reclaim.Container{ID: v.Key, Image: v.Image, PodUID: v.PodUID})
	}
	return out, err
}

// removeImageTimeout bounds one image's removal, containerd's collection
// of its content included.
const removeImageTimeout = 2 * time.Minute

func (r reclaimRuntime) RemoveImage(ctx context.Context, name, digest string) error {
	ctx, cancel := context.WithTimeout(ctx, removeImageTimeout)
	defer cancel()
	return r.rt.RemoveImage(ctx, name, digest)
}

// runReclaim runs image GC and the log sweeper until ctx ends; each pod
// the store deletes (stopped and cleaned up) makes it sweep the log dir.
func runReclaim(ctx context.Context, rec *reclaim.Reclaimer, store *status.Store, synced func() bool, log *slog.Logger) {
	changes, err := store.Watch(ctx, 0)
	if err != nil {
		log.Warn("log directories of removed pods are swept at start only", "err", err)
	} else {
		go func() {
			for c := range changes {
				if c.Type == watch.Deleted {
					rec.PodRemoved()
				}
			}
		}()
	}
	rec.Run(ctx, synced)
}
