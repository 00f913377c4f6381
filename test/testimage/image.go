package testimage

import (
	"bytes"
	"compress/gzip"
	_ "crypto/sha256" // registers sha256 for go-digest
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// DefaultBusyboxPath is where Debian's busybox-static installs the binary.
const DefaultBusyboxPath = "/bin/busybox"

// DefaultPath is the PATH every image built here starts with.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// AnnotationImageName is the index annotation containerd names an imported
// image by (containerd's images.AnnotationImageName).
const AnnotationImageName = "io.containerd.image.name"

// ErrInvalid is returned, wrapped, for unusable Options.
var ErrInvalid = errors.New("invalid image options")

// Options describes the image to build.
type Options struct {
	// Ref is the image reference, e.g. "docker.io/library/busybox:latest".
	// Required. A familiar name ("busybox", "busybox:1") is normalized the
	// way containerd and docker do; a missing tag becomes "latest".
	Ref string
	// BusyboxPath is the static busybox copied to /bin/busybox;
	// DefaultBusyboxPath when empty.
	BusyboxPath string
	// ExtraFiles maps an absolute in-image path to a host file copied there
	// with its permission bits kept (symlinks on the host are followed).
	// An extra file replaces an applet symlink of the same path.
	ExtraFiles map[string]string
	// Cmd is the image's default command. When nil it is ["sh"], unless
	// Entrypoint is set, in which case there is no default command (as a
	// Dockerfile ENTRYPOINT resets an inherited CMD).
	Cmd []string
	// Entrypoint is the image's entrypoint.
	Entrypoint []string
	// Env is appended after DefaultPath.
	Env []string
	// WorkingDir is the working directory; "/" when empty.
	WorkingDir string
	// StopSignal is the image's stop signal, e.g. "SIGQUIT".
	StopSignal string
	// Labels are the image config labels.
	Labels map[string]string
}

// built is everything both archive formats need.
type built struct {
	named     reference.Named // normalized Ref
	layer     []byte          // uncompressed layer tar
	layerGz   []byte          // gzip of layer
	diffID    digest.Digest   // digest of layer
	config    []byte          // image config JSON
	platform  ocispec.Platform
	configDgt digest.Digest
}

// build produces the layer and config shared by Build and BuildDockerArchive.
func build(opts Options) (*built, error) {
	if opts.Ref == "" {
		return nil, fmt.Errorf("%w: Ref is required", ErrInvalid)
	}
	named, err := reference.ParseDockerRef(opts.Ref)
	if err != nil {
		return nil, fmt.Errorf("%w: ref %q: %v", ErrInvalid, opts.Ref, err)
	}
	if _, ok := named.(reference.Tagged); !ok {
		return nil, fmt.Errorf("%w: ref %q has no tag (digest references cannot name a built image)", ErrInvalid, opts.Ref)
	}
	bb := opts.BusyboxPath
	if bb == "" {
		bb = DefaultBusyboxPath
	}
	layer, err := buildLayer(bb, opts.ExtraFiles)
	if err != nil {
		return nil, err
	}
	layerGz, err := gzipBytes(layer)
	if err != nil {
		return nil, fmt.Errorf("compress layer: %w", err)
	}
	b := &built{
		named:   named,
		layer:   layer,
		layerGz: layerGz,
		diffID:  digest.FromBytes(layer),
		// The busybox binary comes from this host, so the image is for
		// this host's architecture (amd64 here).
		platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
	}
	b.config, err = imageConfig(opts, b.platform, b.diffID)
	if err != nil {
		return nil, err
	}
	b.configDgt = digest.FromBytes(b.config)
	return b, nil
}

// imageConfig renders the OCI image config (also valid as a docker config).
func imageConfig(opts Options, p ocispec.Platform, diffID digest.Digest) ([]byte, error) {
	cmd := opts.Cmd
	if cmd == nil && len(opts.Entrypoint) == 0 {
		cmd = []string{"sh"}
	}
	wd := opts.WorkingDir
	if wd == "" {
		wd = "/"
	}
	img := ocispec.Image{
		Platform: p,
		Config: ocispec.ImageConfig{
			Env:        append([]string{DefaultPath}, opts.Env...),
			Entrypoint: opts.Entrypoint,
			Cmd:        cmd,
			WorkingDir: wd,
			Labels:     opts.Labels,
			StopSignal: opts.StopSignal,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{
			Created:   &epoch,
			CreatedBy: "podvisor test/testimage: busybox-static layer",
		}},
		Created: &epoch,
	}
	data, err := json.Marshal(img)
	if err != nil {
		return nil, fmt.Errorf("encode image config: %w", err)
	}
	return data, nil
}

// Build writes an OCI image-layout tar archive (oci-layout, index.json,
// blobs/sha256/...) to path holding one image built from opts. The
// index.json manifest descriptor carries the annotations
// "io.containerd.image.name" (the normalized Ref) and
// "org.opencontainers.image.ref.name" (its tag), so containerd imports it
// under the full Ref with no import options.
func Build(path string, opts Options) error {
	b, err := build(opts)
	if err != nil {
		return err
	}
	layerDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageLayerGzip,
		Digest:    digest.FromBytes(b.layerGz),
		Size:      int64(len(b.layerGz)),
	}
	configDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageConfig,
		Digest:    b.configDgt,
		Size:      int64(len(b.config)),
	}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	platform := b.platform
	manifestDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageManifest,
		Digest:    digest.FromBytes(manifest),
		Size:      int64(len(manifest)),
		Platform:  &platform,
		Annotations: map[string]string{
			AnnotationImageName:       b.named.String(),
			ocispec.AnnotationRefName: b.named.(reference.Tagged).Tag(),
		},
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return fmt.Errorf("encode index: %w", err)
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return fmt.Errorf("encode oci-layout: %w", err)
	}

	blob := func(data []byte) entry {
		return fileEntry("blobs/sha256/"+digest.FromBytes(data).Encoded(), 0o644, data)
	}
	entries := []entry{
		fileEntry(ocispec.ImageLayoutFile, 0o644, layout),
		dirEntry("blobs", 0o755),
		dirEntry("blobs/sha256", 0o755),
		blob(b.layerGz),
		blob(b.config),
		blob(manifest),
		fileEntry(ocispec.ImageIndexFile, 0o644, index),
	}
	return writeArchive(path, entries)
}

// dockerManifest is one entry of a `docker save` manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// BuildDockerArchive writes a `docker save` style tar archive to path:
// manifest.json (RepoTags holds the familiar form of opts.Ref, e.g.
// "busybox:latest"), the config as <config-hex>.json and the uncompressed
// layer as <diffid-hex>/layer.tar. containerd's importer normalizes RepoTags
// back to the full reference.
func BuildDockerArchive(path string, opts Options) error {
	b, err := build(opts)
	if err != nil {
		return err
	}
	tag := reference.FamiliarString(b.named)
	layerDir := b.diffID.Encoded()
	configName := b.configDgt.Encoded() + ".json"
	manifest, err := json.Marshal([]dockerManifest{{
		Config:   configName,
		RepoTags: []string{tag},
		Layers:   []string{layerDir + "/layer.tar"},
	}})
	if err != nil {
		return fmt.Errorf("encode manifest.json: %w", err)
	}
	// The legacy "repositories" file lets old `docker load` versions tag too.
	repoName := reference.FamiliarName(b.named)
	repositories, err := json.Marshal(map[string]map[string]string{
		repoName: {b.named.(reference.Tagged).Tag(): layerDir},
	})
	if err != nil {
		return fmt.Errorf("encode repositories: %w", err)
	}
	entries := []entry{
		fileEntry(configName, 0o644, b.config),
		dirEntry(layerDir, 0o755),
		fileEntry(layerDir+"/VERSION", 0o644, []byte("1.0")),
		fileEntry(layerDir+"/layer.tar", 0o644, b.layer),
		fileEntry("manifest.json", 0o644, manifest),
		fileEntry("repositories", 0o644, repositories),
	}
	return writeArchive(path, entries)
}

// writeArchive writes entries as a tar to path, atomically via a temp file
// in the same directory so a reader never sees half an archive.
func writeArchive(path string, entries []entry) (err error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, entries); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".image-*.tar")
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return nil
}

// gzipBytes compresses data; compress/gzip output is stable for a given Go
// release as long as the header (name, mtime) is left empty.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
