package testimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// readTar returns the headers (in order) and regular file contents of a tar.
func readTar(t *testing.T, r io.Reader) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	tr := tar.NewReader(r)
	var hdrs []*tar.Header
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return hdrs, files
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		hdrs = append(hdrs, hdr)
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("read %s: %v", hdr.Name, err)
			}
			files[hdr.Name] = data
		}
	}
}

// testBusybox returns a busybox to build from: the real one when installed,
// else a stand-in file (the archive structure does not care).
func testBusybox(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(DefaultBusyboxPath); err == nil {
		return DefaultBusyboxPath
	}
	p := filepath.Join(t.TempDir(), "busybox")
	if err := os.WriteFile(p, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// blob returns the verified blob for desc from an OCI layout.
func blob(t *testing.T, files map[string][]byte, desc ocispec.Descriptor) []byte {
	t.Helper()
	data, ok := files["blobs/sha256/"+desc.Digest.Encoded()]
	if !ok {
		t.Fatalf("blob %s (%s) missing", desc.Digest, desc.MediaType)
	}
	if got := digest.FromBytes(data); got != desc.Digest {
		t.Fatalf("blob %s has digest %s", desc.Digest, got)
	}
	if int64(len(data)) != desc.Size {
		t.Fatalf("blob %s: size %d, descriptor says %d", desc.Digest, len(data), desc.Size)
	}
	return data
}

func decodeJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// checkLayer verifies the root filesystem in an uncompressed layer.
func checkLayer(t *testing.T, layer []byte, busybox string, extra map[string][]byte) map[string]*tar.Header {
	t.Helper()
	hdrs, files := readTar(t, bytes.NewReader(layer))
	byName := map[string]*tar.Header{}
	var names []string
	for _, h := range hdrs {
		if h.ModTime.Unix() != 0 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v uid %d gid %d, want fixed 0", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		name := strings.TrimSuffix(h.Name, "/")
		byName[name] = h
		names = append(names, name)
	}
	if !slices.IsSorted(names) {
		t.Errorf("layer entries not sorted: %v", names)
	}
	want, _ := os.ReadFile(busybox)
	if !bytes.Equal(files["bin/busybox"], want) {
		t.Errorf("bin/busybox differs from %s", busybox)
	}
	if h := byName["bin/busybox"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("bin/busybox not executable: %+v", h)
	}
	for _, a := range baseApplets {
		h := byName["bin/"+a]
		if h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
			t.Errorf("bin/%s: want symlink to busybox, got %+v", a, h)
		}
	}
	for d, mode := range map[string]int64{"etc": 0o755, "tmp": 0o1777, "var/www": 0o755, "proc": 0o555, "sys": 0o555, "dev": 0o755, "root": 0o700} {
		h := byName[d]
		if h == nil || h.Typeflag != tar.TypeDir || h.Mode != mode {
			t.Errorf("%s: want dir mode %o, got %+v", d, mode, h)
		}
	}
	if !strings.Contains(string(files["etc/passwd"]), "nobody:x:65534:65534:") ||
		!strings.HasPrefix(string(files["etc/passwd"]), "root:x:0:0:") {
		t.Errorf("etc/passwd = %q", files["etc/passwd"])
	}
	if !strings.Contains(string(files["etc/group"]), "nobody:x:65534:") {
		t.Errorf("etc/group = %q", files["etc/group"])
	}
	for name, data := range extra {
		if !bytes.Equal(files[name], data) {
			t.Errorf("extra %s = %q, want %q", name, files[name], data)
		}
	}
	return byName
}

func TestBuild(t *testing.T) {
	bb := testBusybox(t)
	dir := t.TempDir()
	helper := filepath.Join(dir, "helper")
	if err := os.WriteFile(helper, []byte("helper bytes"), 0o750); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		opts      Options
		wantName  string
		wantTag   string
		wantCmd   []string
		wantEntry []string
		wantEnv   []string
		wantWD    string
		extra     map[string][]byte // in-layer path -> content
	}{
		{
			name:     "defaults",
			opts:     Options{Ref: "docker.io/library/busybox:latest", BusyboxPath: bb},
			wantName: "docker.io/library/busybox:latest", wantTag: "latest",
			wantCmd: []string{"sh"}, wantEnv: []string{DefaultPath}, wantWD: "/",
		},
		{
			name:     "familiar ref is normalized",
			opts:     Options{Ref: "busybox", BusyboxPath: bb},
			wantName: "docker.io/library/busybox:latest", wantTag: "latest",
			wantCmd: []string{"sh"}, wantEnv: []string{DefaultPath}, wantWD: "/",
		},
		{
			name: "all options",
			opts: Options{
				Ref: "example.com/podvisor/helper:v1", BusyboxPath: bb,
				ExtraFiles: map[string]string{"/usr/local/bin/helper": helper},
				Cmd:        []string{"--serve"}, Entrypoint: []string{"/usr/local/bin/helper"},
				Env: []string{"A=1"}, WorkingDir: "/var/www", StopSignal: "SIGQUIT",
				Labels: map[string]string{"k": "v"},
			},
			wantName: "example.com/podvisor/helper:v1", wantTag: "v1",
			wantCmd: []string{"--serve"}, wantEntry: []string{"/usr/local/bin/helper"},
			wantEnv: []string{DefaultPath, "A=1"}, wantWD: "/var/www",
			extra: map[string][]byte{"usr/local/bin/helper": []byte("helper bytes")},
		},
		{
			name:     "entrypoint without cmd has no default cmd",
			opts:     Options{Ref: "busybox:ep", BusyboxPath: bb, Entrypoint: []string{"sleep"}},
			wantName: "docker.io/library/busybox:ep", wantTag: "ep",
			wantEntry: []string{"sleep"}, wantEnv: []string{DefaultPath}, wantWD: "/",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "image.tar")
			if err := Build(path, tc.opts); err != nil {
				t.Fatalf("Build: %v", err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			hdrs, files := readTar(t, f)
			var names []string
			for _, h := range hdrs {
				names = append(names, h.Name)
			}
			for _, n := range []string{"oci-layout", "index.json", "blobs/", "blobs/sha256/"} {
				if !slices.Contains(names, n) {
					t.Errorf("archive lacks %s: %v", n, names)
				}
			}
			if len(files) != 5 { // oci-layout, index.json, manifest, config, layer
				t.Errorf("archive files = %v, want oci-layout, index.json and 3 blobs", names)
			}
			var layout ocispec.ImageLayout
			decodeJSON(t, files["oci-layout"], &layout)
			if layout.Version != ocispec.ImageLayoutVersion {
				t.Errorf("oci-layout version %q", layout.Version)
			}

			var index ocispec.Index
			decodeJSON(t, files["index.json"], &index)
			if index.SchemaVersion != 2 || len(index.Manifests) != 1 {
				t.Fatalf("index = %+v", index)
			}
			md := index.Manifests[0]
			if md.MediaType != ocispec.MediaTypeImageManifest {
				t.Errorf("manifest media type %q", md.MediaType)
			}
			if got := md.Annotations[AnnotationImageName]; got != tc.wantName {
				t.Errorf("%s = %q, want %q", AnnotationImageName, got, tc.wantName)
			}
			if got := md.Annotations[ocispec.AnnotationRefName]; got != tc.wantTag {
				t.Errorf("%s = %q, want %q", ocispec.AnnotationRefName, got, tc.wantTag)
			}
			if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture == "" {
				t.Errorf("manifest platform = %+v", md.Platform)
			}

			var manifest ocispec.Manifest
			decodeJSON(t, blob(t, files, md), &manifest)
			if manifest.Config.MediaType != ocispec.MediaTypeImageConfig || len(manifest.Layers) != 1 {
				t.Fatalf("manifest = %+v", manifest)
			}
			if manifest.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip {
				t.Errorf("layer media type %q", manifest.Layers[0].MediaType)
			}
			var config ocispec.Image
			decodeJSON(t, blob(t, files, manifest.Config), &config)
			zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0])))
			if err != nil {
				t.Fatalf("layer is not gzip: %v", err)
			}
			layer, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("gunzip layer: %v", err)
			}
			if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != digest.FromBytes(layer) {
				t.Errorf("diff_ids %v, uncompressed layer is %s", config.RootFS.DiffIDs, digest.FromBytes(layer))
			}
			if config.OS != "linux" || config.Architecture != md.Platform.Architecture {
				t.Errorf("config platform %s/%s", config.OS, config.Architecture)
			}
			c := config.Config
			if !slices.Equal(c.Cmd, tc.wantCmd) || !slices.Equal(c.Entrypoint, tc.wantEntry) ||
				!slices.Equal(c.Env, tc.wantEnv) || c.WorkingDir != tc.wantWD ||
				c.StopSignal != tc.opts.StopSignal || len(c.Labels) != len(tc.opts.Labels) {
				t.Errorf("config = %+v", c)
			}
			byName := checkLayer(t, layer, bb, tc.extra)
			if h := byName["usr/local/bin/helper"]; tc.extra != nil && (h == nil || h.Mode != 0o750) {
				t.Errorf("helper header %+v, want mode 750", h)
			}
		})
	}
}

func TestBuildDockerArchive(t *testing.T) {
	bb := testBusybox(t)
	tests := []struct {
		ref, wantTag string
	}{
		{"docker.io/library/busybox:latest", "busybox:latest"},
		{"example.com/team/tool:1.0", "example.com/team/tool:1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "docker.tar")
			if err := BuildDockerArchive(path, Options{Ref: tc.ref, BusyboxPath: bb}); err != nil {
				t.Fatalf("BuildDockerArchive: %v", err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, files := readTar(t, f)
			var manifests []dockerManifest
			decodeJSON(t, files["manifest.json"], &manifests)
			if len(manifests) != 1 || !slices.Equal(manifests[0].RepoTags, []string{tc.wantTag}) || len(manifests[0].Layers) != 1 {
				t.Fatalf("manifest.json = %+v", manifests)
			}
			m := manifests[0]
			cfg, ok := files[m.Config]
			if !ok {
				t.Fatalf("config %s missing", m.Config)
			}
			if want := digest.FromBytes(cfg).Encoded() + ".json"; m.Config != want {
				t.Errorf("config named %s, its digest gives %s", m.Config, want)
			}
			layer, ok := files[m.Layers[0]]
			if !ok {
				t.Fatalf("layer %s missing", m.Layers[0])
			}
			var config ocispec.Image
			decodeJSON(t, cfg, &config)
			if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != digest.FromBytes(layer) {
				t.Errorf("diff_ids %v, layer.tar is %s", config.RootFS.DiffIDs, digest.FromBytes(layer))
			}
			if want := digest.FromBytes(layer).Encoded() + "/layer.tar"; m.Layers[0] != want {
				t.Errorf("layer at %s, want %s", m.Layers[0], want)
			}
			checkLayer(t, layer, bb, nil)
		})
	}
}

func TestDeterministic(t *testing.T) {
	bb := testBusybox(t)
	builders := []struct {
		name  string
		build func(string, Options) error
	}{
		{"oci", Build},
		{"docker", BuildDockerArchive},
	}
	for _, b := range builders {
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Ref: "docker.io/library/busybox:latest", BusyboxPath: bb,
				Labels: map[string]string{"a": "1", "b": "2", "c": "3"}}
			var archives [][]byte
			for _, name := range []string{"one.tar", "two.tar"} {
				p := filepath.Join(dir, name)
				if err := b.build(p, opts); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				archives = append(archives, data)
			}
			if !bytes.Equal(archives[0], archives[1]) {
				t.Error("two builds of the same inputs differ")
			}
			// A different input must change the archive.
			opts.Env = []string{"X=1"}
			p := filepath.Join(dir, "three.tar")
			if err := b.build(p, opts); err != nil {
				t.Fatal(err)
			}
			if data, _ := os.ReadFile(p); bytes.Equal(data, archives[0]) {
				t.Error("different Env gave the same archive")
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	bb := testBusybox(t)
	dir := t.TempDir()
	tests := []struct {
		name    string
		opts    Options
		invalid bool // wants ErrInvalid
	}{
		{"no ref", Options{BusyboxPath: bb}, true},
		{"bad ref", Options{Ref: "Busybox:x", BusyboxPath: bb}, true},
		{"digest ref", Options{Ref: "busybox@sha256:" + strings.Repeat("a", 64), BusyboxPath: bb}, true},
		{"missing busybox", Options{Ref: "busybox", BusyboxPath: filepath.Join(dir, "nope")}, false},
		{"relative extra", Options{Ref: "busybox", BusyboxPath: bb, ExtraFiles: map[string]string{"bin/x": bb}}, true},
		{"extra over dir", Options{Ref: "busybox", BusyboxPath: bb, ExtraFiles: map[string]string{"/etc": bb}}, true},
		{"extra is dir", Options{Ref: "busybox", BusyboxPath: bb, ExtraFiles: map[string]string{"/x": dir}}, true},
		{"extra missing", Options{Ref: "busybox", BusyboxPath: bb, ExtraFiles: map[string]string{"/x": filepath.Join(dir, "nope")}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "out.tar")
			err := Build(path, tc.opts)
			if err == nil {
				t.Fatal("Build succeeded")
			}
			if got := errors.Is(err, ErrInvalid); got != tc.invalid {
				t.Errorf("errors.Is(%v, ErrInvalid) = %v, want %v", err, got, tc.invalid)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("failed Build left %s behind", path)
			}
		})
	}
}
