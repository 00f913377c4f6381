package containerd

import (
	"context"
	"fmt"
	"io"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/podvisor/podvisor/internal/images"
)

// Import imports one OCI-layout or docker-save archive, read from archive,
// names its images as docker does (a bare tag after the archive's file
// name, name), and unpacks them for the snapshotter. The caller opens the
// archive: the images dir reads it from the descriptor whose trust it
// checked.
func (r *Runtime) Import(ctx context.Context, name string, archive io.Reader) (_ []string, err error) {
	defer markUnavailable(&err)
	var names []string
	err = r.withLease(ctx, "import", func(ctx context.Context) error {
		imgs, err := r.client.Import(ctx, archive,
			client.WithImageRefTranslator(images.RefTranslator(name)),
			client.WithSkipDigestRef(func(string) bool { return true }),
		)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		for _, i := range imgs {
			img := client.NewImage(r.client, i)
			if err := img.Unpack(ctx, r.opts.Snapshotter); err != nil {
				return fmt.Errorf("unpack %s: %w", i.Name, err)
			}
			r.markUnpacked(img.Target().Digest.String(), true)
			names = append(names, i.Name)
		}
		return nil
	})
	if err != nil {
		return names, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("archive names no image (no io.containerd.image.name or org.opencontainers.image.ref.name annotation, no RepoTags)")
	}
	return names, nil
}

// ImageDigests returns the target digest of each of the named images that
// exists, by name; a name with no image is left out. It is how the images
// dir tells, at start, that an archive imported before is still what
// containerd holds.
func (r *Runtime) ImageDigests(ctx context.Context, names []string) (_ map[string]string, err error) {
	defer markUnavailable(&err)
	out := make(map[string]string, len(names))
	is := r.client.ImageService()
	for _, n := range names {
		img, err := is.Get(ctx, n)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look up image %s: %w", n, err)
		}
		out[n] = img.Target.Digest.String()
	}
	return out, nil
}
