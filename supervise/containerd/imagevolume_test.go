package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestCheckImageConfig: an image (OCI or Docker config) can be mounted as
// an image volume; an OCI artifact (quay.io/crio/artifact's shape: an
// empty config, an artifactType, layers of its own media type) is refused
// naming its type.
func TestCheckImageConfig(t *testing.T) {
	ctx := context.Background()
	cs, err := local.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(mediaType string, b []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(ctx, cs, d.Digest.String(), bytes.NewReader(b), d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	manifest := func(m ocispec.Manifest) ocispec.Descriptor {
		m.Versioned = specs.Versioned{SchemaVersion: 2}
		m.MediaType = ocispec.MediaTypeImageManifest
		b, _ := json.Marshal(m)
		return put(ocispec.MediaTypeImageManifest, b)
	}
	layer := put(ocispec.MediaTypeImageLayer, []byte("layer"))
	image := manifest(ocispec.Manifest{Config: put(ocispec.MediaTypeImageConfig, []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)), Layers: []ocispec.Descriptor{layer}})
	if err := checkImageConfig(ctx, cs, image, "registry.test/image:1"); err != nil {
		t.Errorf("image refused: %v", err)
	}
	artifact := manifest(ocispec.Manifest{
		ArtifactType: "application/vnd.cncf.seccomp-profile.config.v1+json",
		Config:       put(ocispec.MediaTypeEmptyJSON, []byte("{}")),
		Layers:       []ocispec.Descriptor{put("application/vnd.oci.image.layer.v1.tar", []byte("file"))},
	})
	err = checkImageConfig(ctx, cs, artifact, "quay.io/crio/artifact:v2")
	if err == nil || !errors.Is(err, errArtifact) || !strings.Contains(err.Error(), "application/vnd.cncf.seccomp-profile.config.v1+json") {
		t.Errorf("artifact: %v, want it refused naming its type", err)
	}
}
