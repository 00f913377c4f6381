package containerd

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/platforms"
)

// TestListImages: the namespace's images with their name, digest, config
// digest and content size (manifest, config and layers), nothing before
// an import.
func TestListImages(t *testing.T) {
	_, env, c, rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got, err := rt.ListImages(ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListImages before an import = %+v, %v; want none", got, err)
	}
	if _, err := importFile(ctx, rt, env.ImageArchive); err != nil {
		t.Fatal(err)
	}
	got, err := rt.ListImages(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("ListImages = %+v, %v; want the imported image", got, err)
	}
	img, err := c.ImageService().Get(ctx, env.ImageRef)
	if err != nil {
		t.Fatal(err)
	}
	if !images.IsManifestType(img.Target.MediaType) {
		t.Fatalf("the test image's target is a %s, not a manifest", img.Target.MediaType)
	}
	m, err := images.Manifest(ctx, c.ContentStore(), img.Target, platforms.Default())
	if err != nil {
		t.Fatal(err)
	}
	size := img.Target.Size + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	i := got[0]
	if i.Name != env.ImageRef || i.Digest != img.Target.Digest.String() || i.ID != m.Config.Digest.String() || i.Size != size {
		t.Errorf("ListImages = %+v; want name %s, digest %s, ID %s, size %d", i, env.ImageRef, img.Target.Digest, m.Config.Digest, size)
	}
}
