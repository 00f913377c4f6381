package mounts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestImageSubPath: a subPath of an image volume must be an existing
// directory inside the image, as containerd's CRI requires.
func TestImageSubPath(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc/conf", "data"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "etc/file"), []byte("x"), 0o644)
	os.Symlink("conf", filepath.Join(root, "etc/inside"))
	os.Symlink("/etc", filepath.Join(root, "abs"))
	os.Symlink("../..", filepath.Join(root, "data/up"))
	for _, tc := range []struct {
		sub, want, err string
	}{
		{sub: "etc/conf", want: "etc/conf"},
		{sub: "etc/inside", want: "etc/conf"},
		{sub: "etc/./conf/", want: "etc/conf"},
		{sub: "etc/file", err: "not a directory"},
		{sub: "missing/dir", err: "no such file or directory"},
		{sub: "abs", err: "outside the volume"},
		{sub: "data/up", err: "outside the volume"},
		{sub: "../x", err: "'..'"},
		{sub: "/etc", err: "relative"},
	} {
		got, err := ImageSubPath(root, tc.sub)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tc.sub, got, err, tc.err)
			}
			continue
		}
		realRoot, _ := filepath.EvalSymlinks(root)
		if err != nil || got != filepath.Join(realRoot, tc.want) {
			t.Errorf("%s: %q, %v; want %s", tc.sub, got, err, tc.want)
		}
	}
}

// TestContainerMountsImageVolume: an image volume is a read-only bind
// mount of where its image is mounted, even when the volumeMount says
// readOnly false, its subPath a directory of it; propagation applies; a
// volume the runtime did not mount is an error.
func TestContainerMountsImageVolume(t *testing.T) {
	dir := t.TempDir()
	img := ImageVolumeDir(dir, "sha256:abc")
	if want := filepath.Join(dir, "volumes/image/abc"); img != want {
		t.Fatalf("ImageVolumeDir = %s, want %s", img, want)
	}
	if err := os.MkdirAll(filepath.Join(img, "data/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	hostToContainer := v1.MountPropagationHostToContainer
	pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "x:1"}}}}}}
	c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/sub", SubPath: "data/sub", MountPropagation: &hostToContainer},
	}}
	p := Pod{Spec: pod, Dir: dir, ImageVolumes: map[string]string{"data": img}}
	ms, err := ContainerMounts(p, c, "")
	if err != nil {
		t.Fatal(err)
	}
	realImg, _ := filepath.EvalSymlinks(img)
	want := map[string]struct {
		src  string
		opts []string
	}{
		"/data": {img, []string{"rbind", "rprivate", "ro"}},
		"/sub":  {filepath.Join(realImg, "data/sub"), []string{"rbind", "rslave", "ro"}},
	}
	for _, m := range ms {
		w, ok := want[m.Destination]
		if !ok {
			continue
		}
		delete(want, m.Destination)
		if m.Source != w.src || !slices.Equal(m.Options, w.opts) {
			t.Errorf("%s: source %s options %q, want %s %q", m.Destination, m.Source, m.Options, w.src, w.opts)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing mounts %v in %+v", want, ms)
	}
	p.ImageVolumes = nil
	if _, err := ContainerMounts(p, c, ""); err == nil || !strings.Contains(err.Error(), "not mounted") {
		t.Errorf("unmounted image volume: %v", err)
	}
	// Setup leaves image volumes to the runtime.
	if err := setupVolume(dir, &pod.Spec.Volumes[0], nil); err != nil {
		t.Errorf("setupVolume: %v", err)
	}
}
