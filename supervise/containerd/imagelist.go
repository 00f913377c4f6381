package containerd

import (
	"context"
	"fmt"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/internal/images"
)

// listImagesTimeout bounds ListImages as a whole.
const listImagesTimeout = 10 * time.Second

// ListImages returns every image in podvisor's namespace: its name, the
// digest it points at, its config digest (crictl's IMAGE ID) and its
// content size for this platform (crictl's SIZE). An image whose content
// is missing (partly pulled, or for another platform) is listed with no ID
// and size 0. It is the API's ImageLister, bounded by 10s.
func (r *Runtime) ListImages(ctx context.Context) (_ []images.Info, err error) {
	defer markUnavailable(&err)
	ctx, cancel := context.WithTimeout(ctx, listImagesTimeout)
	defer cancel()
	imgs, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]images.Info, 0, len(imgs))
	for _, i := range imgs {
		info := images.Info{Name: i.Name, Digest: i.Target.Digest.String()}
		img := client.NewImage(r.client, i)
		if cfg, err := img.Config(ctx); err == nil {
			info.ID = cfg.Digest.String()
		} else if ctx.Err() != nil {
			return nil, fmt.Errorf("read image %s: %w", i.Name, err)
		}
		if size, err := img.Size(ctx); err == nil {
			info.Size = size
		} else if ctx.Err() != nil {
			return nil, fmt.Errorf("size of image %s: %w", i.Name, err)
		}
		out = append(out, info)
	}
	return out, nil
}
