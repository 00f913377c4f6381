package testimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podvisor/podvisor/test/testenv"
	"github.com/podvisor/podvisor/test/testimage"
)

const ref = "docker.io/library/busybox:latest"

// withoutImageName rewrites an OCI archive so index.json keeps only the
// org.opencontainers.image.ref.name annotation, as most OCI tools write it.
func withoutImageName(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	tr, tw := tar.NewReader(in), tar.NewWriter(&out)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == ocispec.ImageIndexFile {
			var idx ocispec.Index
			if err := json.Unmarshal(data, &idx); err != nil {
				t.Fatal(err)
			}
			for i := range idx.Manifests {
				delete(idx.Manifests[i].Annotations, testimage.AnnotationImageName)
			}
			if data, err = json.Marshal(idx); err != nil {
				t.Fatal(err)
			}
			hdr.Size = int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImport imports the archives into a real containerd and unpacks them
// for overlayfs. It also pins down how containerd names OCI-layout images:
// io.containerd.image.name wins; with only org.opencontainers.image.ref.name
// a plain Import names the image by the bare tag.
func TestImport(t *testing.T) {
	testenv.RequireRoot(t)
	env, err := testenv.Start("")
	if err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	env.Logf = t.Logf
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop containerd: %v", err)
		}
	})
	c, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	dir := t.TempDir()
	ociPath, dockerPath, bareTagPath := filepath.Join(dir, "oci.tar"), filepath.Join(dir, "docker.tar"), filepath.Join(dir, "bare.tar")
	opts := testimage.Options{Ref: ref, Cmd: []string{"sleep", "5"}}
	if err := testimage.Build(ociPath, opts); err != nil {
		t.Fatal(err)
	}
	if err := testimage.BuildDockerArchive(dockerPath, opts); err != nil {
		t.Fatal(err)
	}
	withoutImageName(t, ociPath, bareTagPath)

	tests := []struct {
		name      string
		archive   string
		opts      []client.ImportOpt
		wantNames []string
	}{
		{"oci plain", ociPath, nil, []string{ref}},
		{"docker plain", dockerPath, nil, []string{ref}},
		{"docker compressed", dockerPath, []client.ImportOpt{client.WithImportCompression()}, []string{ref}},
		{"oci ref.name only, plain", bareTagPath, nil, []string{"latest"}},
		{"oci ref.name only, translated", bareTagPath,
			[]client.ImportOpt{client.WithImageRefTranslator(archive.AddRefPrefix("docker.io/library/busybox"))}, []string{ref}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			ctx = namespaces.WithNamespace(ctx, fmt.Sprintf("image-test-%d", i))
			f, err := os.Open(tc.archive)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			imgs, err := c.Import(ctx, f, tc.opts...)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			var names []string
			for _, img := range imgs {
				names = append(names, img.Name)
			}
			if !slices.Equal(names, tc.wantNames) {
				t.Fatalf("imported names %v, want %v", names, tc.wantNames)
			}
			img, err := c.GetImage(ctx, tc.wantNames[0])
			if err != nil {
				t.Fatalf("GetImage: %v", err)
			}
			if err := img.Unpack(ctx, "overlayfs"); err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			if ok, err := img.IsUnpacked(ctx, "overlayfs"); err != nil || !ok {
				t.Fatalf("IsUnpacked = %v, %v", ok, err)
			}
			spec, err := img.Spec(ctx)
			if err != nil {
				t.Fatalf("image config: %v", err)
			}
			if !slices.Equal(spec.Config.Cmd, opts.Cmd) || spec.Config.WorkingDir != "/" {
				t.Errorf("image config %+v", spec.Config)
			}
		})
	}
}
