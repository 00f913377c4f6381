package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"
)

// TestCheckImageConfig: an image (OCI or Docker config) can be mounted as
// an image volume; an OCI artifact (quay.io/crio/artifact's shape: an
// empty config, an artifactType, layers of its own media type) is refused
// naming its type.
func TestCheckImageConfig(t *testing.T) {
	ctx := context.Background()
	cs, put := blobStore(t)
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
	err := checkImageConfig(ctx, cs, artifact, "quay.io/crio/artifact:v2")
	if err == nil || !errors.Is(err, errArtifact) || !strings.Contains(err.Error(), "application/vnd.cncf.seccomp-profile.config.v1+json") {
		t.Errorf("artifact: %v, want it refused naming its type", err)
	}
}

// TestArtifactFiles: each layer of an artifact is a file named by its
// title (else its model-spec file path, else its digest), as CRI-O names
// them; a title that is absolute or leads out of the volume, two layers
// of one name, and a file where a directory is needed are refused naming
// the layer.
func TestArtifactFiles(t *testing.T) {
	layer := func(b string, ann ...string) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: digest.FromString(b), Size: int64(len(b))}
		if len(ann) > 0 {
			d.Annotations = map[string]string{}
			for i := 0; i+1 < len(ann); i += 2 {
				d.Annotations[ann[i]] = ann[i+1]
			}
		}
		return d
	}
	const title = ocispec.AnnotationTitle
	untitled := layer("u")
	for _, c := range []struct {
		name   string
		layers []ocispec.Descriptor
		want   []string // file names, or the refusal's words
		bad    bool
	}{
		{"docs example", []ocispec.Descriptor{layer("1", title, "dir/file"), layer("2", title, "file")}, []string{"dir/file", "file"}, false},
		{"model-spec path, digest", []ocispec.Descriptor{layer("m", "org.cncf.model.filepath", "model/w.bin"), untitled}, []string{"model/w.bin", "sha256-" + untitled.Digest.Encoded()}, false},
		{"title first", []ocispec.Descriptor{layer("t", title, "a", "org.cncf.model.filepath", "b")}, []string{"a"}, false},
		{"cleaned", []ocispec.Descriptor{layer("c", title, "./x//y")}, []string{"x/y"}, false},
		{"absolute", []ocispec.Descriptor{layer("a", title, "/etc/passwd")}, []string{`"/etc/passwd"`, "absolute"}, true},
		{"dot-dot", []ocispec.Descriptor{layer("d", title, "../escape")}, []string{`"../escape"`, "lead out of the volume"}, true},
		{"inner dot-dot", []ocispec.Descriptor{layer("i", title, "a/../../b")}, []string{"lead out of the volume"}, true},
		{"dot", []ocispec.Descriptor{layer("o", title, ".")}, []string{"names no file"}, true},
		{"twice", []ocispec.Descriptor{layer("1", title, "f"), layer("2", title, "f")}, []string{"layer 1", `"f" is already a file`}, true},
		{"file then dir", []ocispec.Descriptor{layer("1", title, "f"), layer("2", title, "f/g")}, []string{`"f" is a file of the artifact, not a directory`}, true},
		{"dir then file", []ocispec.Descriptor{layer("1", title, "f/g"), layer("2", title, "f")}, []string{`"f" is already a directory`}, true},
	} {
		files, err := artifactFiles("registry.test/a:1", ocispec.Manifest{Layers: c.layers})
		if c.bad {
			if !errors.Is(err, errArtifactLayout) {
				t.Errorf("%s: %v, want it refused", c.name, err)
				continue
			}
			for _, w := range append(c.want, "registry.test/a:1") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %q does not say %q", c.name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for i, f := range files {
			got = append(got, f.name)
			if f.desc.Digest != c.layers[i].Digest {
				t.Errorf("%s: file %s from %s, want %s", c.name, f.name, f.desc.Digest, c.layers[i].Digest)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: files %q, want %q", c.name, got, c.want)
		}
	}
}

// TestWriteArtifactFiles: the layers' blobs, streamed from the content
// store, become files with their content, 0644 in 0755 directories
// whatever the umask; a blob that does not match its descriptor's digest,
// or is missing, fails the write; checkArtifact refuses an artifact whose
// layer is not in the content store.
func TestWriteArtifactFiles(t *testing.T) {
	ctx := context.Background()
	cs, put := blobStore(t)
	one := put("application/vnd.oci.image.layer.v1.tar", []byte("1\n"))
	big := put("application/octet-stream", bytes.Repeat([]byte("x"), 1<<20+7))
	files := []artifactFile{{"dir/file", one}, {"file", put("application/vnd.oci.image.layer.v1.tar", []byte("2\n"))}, {"a/b/big", big}}
	root := t.TempDir()
	old := unix.Umask(0o077)
	err := writeArtifactFiles(ctx, cs, root, files)
	unix.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"dir/file": "1\n", "file": "2\n", "a/b/big": strings.Repeat("x", 1<<20+7)} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
		if fi, err := os.Stat(filepath.Join(root, name)); err != nil || fi.Mode() != 0o644 {
			t.Errorf("%s: mode %v, %v, want 0644", name, fi.Mode(), err)
		}
	}
	for _, dir := range []string{"dir", "a", "a/b"} {
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || fi.Mode() != os.ModeDir|0o755 {
			t.Errorf("%s: mode %v, %v, want a 0755 directory", dir, fi.Mode(), err)
		}
	}

	// A descriptor whose size lies: the copy stops and is refused.
	short := one
	short.Size = 1
	if err := writeArtifactFiles(ctx, cs, t.TempDir(), []artifactFile{{"f", short}}); err == nil {
		t.Error("a blob longer than its descriptor was written")
	}
	missing := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromString("absent"), Size: 6}
	if err := writeArtifactFiles(ctx, cs, t.TempDir(), []artifactFile{{"f", missing}}); err == nil {
		t.Error("a blob absent from the content store was written")
	}

	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: "application/vnd.podvisor.test",
		Config:       put(ocispec.MediaTypeEmptyJSON, []byte("{}")),
		Layers:       []ocispec.Descriptor{one, missing},
	}
	b, _ := json.Marshal(m)
	target := put(ocispec.MediaTypeImageManifest, b)
	if err := checkArtifact(ctx, cs, target, "registry.test/a:1"); err == nil || !strings.Contains(err.Error(), missing.Digest.String()) {
		t.Errorf("checkArtifact with a layer absent: %v, want it named", err)
	}
	m.Layers = m.Layers[:1]
	b, _ = json.Marshal(m)
	if err := checkArtifact(ctx, cs, put(ocispec.MediaTypeImageManifest, b), "registry.test/a:1"); err != nil {
		t.Errorf("checkArtifact: %v", err)
	}
}

// blobStore is a content store in a temporary directory and put, which
// writes a blob of mediaType to it and returns its descriptor.
func blobStore(t *testing.T) (content.Store, func(mediaType string, b []byte) ocispec.Descriptor) {
	t.Helper()
	cs, err := local.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cs, func(mediaType string, b []byte) ocispec.Descriptor {
		t.Helper()
		d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(context.Background(), cs, d.Digest.String(), bytes.NewReader(b), d); err != nil {
			t.Fatal(err)
		}
		return d
	}
}
