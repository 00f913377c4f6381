package containerd

import (
	"context"
	"fmt"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/podvisor/podvisor/supervise"
)

// gcTimeout bounds each call of the garbage collector's look-ups (a list
// of images or containers, the image filesystem); a removal is bounded by
// the caller, as it waits for containerd's own garbage collection.
const gcTimeout = 30 * time.Second

// StoredImage is one image name in podvisor's namespace as the image
// garbage collector sees it.
type StoredImage struct {
	// Name is the image's name ("docker.io/library/busybox:1.36").
	Name string
	// Digest is the digest of its target (manifest or index): names with
	// one digest are one image's content.
	Digest string
	// Size is its content's size for this platform, 0 when unknown.
	Size uint64
	// Updated is when the name was last set (created, pulled again or
	// imported again).
	Updated time.Time
}

// StoredImages lists every image name in podvisor's namespace with its
// digest, size and last update, bounded by 30 s.
func (r *Runtime) StoredImages(ctx context.Context) (_ []StoredImage, err error) {
	defer markUnavailable(&err)
	ctx, cancel := context.WithTimeout(ctx, gcTimeout)
	defer cancel()
	imgs, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]StoredImage, 0, len(imgs))
	for _, i := range imgs {
		s := StoredImage{Name: i.Name, Digest: i.Target.Digest.String(), Updated: i.UpdatedAt}
		if size, err := client.NewImage(r.client, i).Size(ctx); err == nil && size > 0 {
			s.Size = uint64(size)
		} else if ctx.Err() != nil {
			return nil, fmt.Errorf("size of image %s: %w", i.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// StoredContainer is one container in podvisor's namespace as the
// garbage collector sees it.
type StoredContainer struct {
	ID string
	// Image is the name of the image it was made from.
	Image string
	// PodUID is its pod's UID label, "" for a container no pod owns.
	PodUID string
}

// Containers lists every container in podvisor's namespace, whatever its
// state or owner, with its image and pod, bounded by 30 s.
func (r *Runtime) Containers(ctx context.Context) (_ []StoredContainer, err error) {
	defer markUnavailable(&err)
	ctx, cancel := context.WithTimeout(ctx, gcTimeout)
	defer cancel()
	ctrs, err := r.client.ContainerService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]StoredContainer, 0, len(ctrs))
	for _, c := range ctrs {
		out = append(out, StoredContainer{ID: c.ID, Image: c.Image, PodUID: c.Labels[supervise.LabelPodUID]})
	}
	return out, nil
}

// RemoveImage removes image name, only while it still points at digest
// (an image pulled or imported again meanwhile under that name is kept),
// and waits for containerd to free the content and snapshots no other
// image or container holds. A name already gone is no error.
func (r *Runtime) RemoveImage(ctx context.Context, name, dgst string) (err error) {
	defer markUnavailable(&err)
	d, err := digest.Parse(dgst)
	if err != nil {
		return fmt.Errorf("remove image %s: %w", name, err)
	}
	err = r.client.ImageService().Delete(ctx, name, images.DeleteTarget(&ocispec.Descriptor{Digest: d}), images.SynchronousDelete())
	if errdefs.IsNotFound(err) {
		err = nil
	}
	// What EnsureImage remembered of the digest is stale now: the next
	// use looks the image up (and unpacks it) again.
	r.markUnpacked(dgst, false)
	r.mu.Lock()
	for id, img := range r.images {
		if img.Target().Digest == d {
			delete(r.images, id)
		}
	}
	delete(r.configs, d.String())
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("remove image %s: %w", name, err)
	}
	return nil
}
