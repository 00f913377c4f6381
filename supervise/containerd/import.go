package containerd

import (
	"context"
	"fmt"
	"os"

	client "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/internal/images"
)

// Import imports one OCI-layout or docker-save archive, names its images as
// docker does, and unpacks them for the snapshotter.
func (r *Runtime) Import(ctx context.Context, path string) (_ []string, err error) {
	defer markUnavailable(&err)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	err = r.withLease(ctx, "import", func(ctx context.Context) error {
		imgs, err := r.client.Import(ctx, f,
			client.WithImageRefTranslator(images.RefTranslator(path)),
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
