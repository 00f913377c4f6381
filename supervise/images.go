package supervise

import (
	"context"
	"fmt"
	"os"
	"sync"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/internal/images"
)

// containerdImporter imports image archives into containerd for the
// images-dir watcher (internal/images).
type containerdImporter struct {
	client      *containerd.Client
	snapshotter string
}

var _ images.Importer = containerdImporter{}

// Import imports one OCI-layout or docker-save archive, names its images
// as docker does, and unpacks them for the snapshotter.
func (i containerdImporter) Import(ctx context.Context, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	imgs, err := i.client.Import(ctx, f,
		containerd.WithImageRefTranslator(images.RefTranslator(path)),
		containerd.WithSkipDigestRef(func(string) bool { return true }),
	)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	var names []string
	for _, im := range imgs {
		img := containerd.NewImage(i.client, im)
		if err := img.Unpack(ctx, i.snapshotter); err != nil {
			return names, fmt.Errorf("unpack %s: %w", im.Name, err)
		}
		names = append(names, im.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("archive names no image (no io.containerd.image.name or org.opencontainers.image.ref.name annotation, no RepoTags)")
	}
	return names, nil
}

// watchImages keeps the images dir imported (internal/images): pods wait
// for the start-up pass (imagesReady), and every import wakes the workers,
// so a pod waiting out a failed pull retries at once.
func (s *Supervisor) watchImages(ctx context.Context) {
	w := images.New(images.Options{
		Dir:      s.cfg.ImagesDir,
		Importer: containerdImporter{client: s.client, snapshotter: s.cfg.Snapshotter},
		Log:      s.log,
		OnImport: func() {
			s.imageGen.Add(1)
			s.wakeAll()
		},
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-w.Ready():
			close(s.imagesReady)
		case <-ctx.Done():
		}
	}()
	w.Run(ctx)
}
