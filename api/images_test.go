package api

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/internal/images"
	"github.com/podvisor/podvisor/internal/version"
	v1 "k8s.io/api/core/v1"
)

// fakeImages is an ImageLister with fixed answers.
type fakeImages struct {
	infos []images.Info
	err   error
}

func (f fakeImages) ListImages(context.Context) ([]images.Info, error) { return f.infos, f.err }

// TestImagesEndpoint: GET /images lists the runtime's images sorted by
// name, each with the pods whose existing containers run its digest;
// a runtime error is a 503 with its message, no lister a 501.
func TestImagesEndpoint(t *testing.T) {
	const busy, other = "sha256:b0", "sha256:0e"
	web := staticPod("default", "web", "n")
	web.Status.ContainerStatuses = []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://1", ImageID: "docker.io/library/busybox@" + busy},
	}
	etcd := staticPod("kube-system", "etcd", "n")
	etcd.Status.InitContainerStatuses = []v1.ContainerStatus{
		{Name: "init", ContainerID: "containerd://2", ImageID: "docker.io/library/busybox@" + busy},
	}
	etcd.Status.ContainerStatuses = []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://3", ImageID: "docker.io/library/busybox@" + busy},
		// Waiting for its first start: no container uses an image yet.
		{Name: "side", ImageID: "example.org/other@" + other},
	}
	store := &podStore{}
	store.set(*web, *etcd)
	lister := fakeImages{infos: []images.Info{
		{Name: "example.org/other:1", Digest: other},
		{Name: "docker.io/library/busybox:latest", Digest: busy, ID: "sha256:c0", Size: 1234},
	}}
	socket := filepath.Join(t.TempDir(), "s.sock")
	serveOpts(t, Options{Socket: socket, Store: store, Images: lister})
	got, err := NewClient(socket).Images(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []Image{
		{Name: "docker.io/library/busybox:latest", Digest: busy, ID: "sha256:c0", Size: 1234, Pods: []string{"default/web-n", "kube-system/etcd-n"}},
		{Name: "example.org/other:1", Digest: other},
	}
	if !reflect.DeepEqual(got.Items, want) {
		t.Errorf("Images = %+v, want %+v", got.Items, want)
	}

	failing := filepath.Join(t.TempDir(), "f.sock")
	serveOpts(t, Options{Socket: failing, Store: store, Images: fakeImages{err: errors.New("containerd is down")}})
	var apiErr *APIError
	if _, err := NewClient(failing).Images(t.Context()); !errors.As(err, &apiErr) || apiErr.Code != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "containerd is down") {
		t.Errorf("Images with a failing runtime: %v, want a 503 with its error", err)
	}
	none := filepath.Join(t.TempDir(), "n.sock")
	serveOpts(t, Options{Socket: none, Store: store})
	if _, err := NewClient(none).Images(t.Context()); !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotImplemented {
		t.Errorf("Images without a lister: %v, want a 501", err)
	}
}

// TestVersionEndpoint: GET /version gives podvisor's version, Go's and
// containerd's, or why containerd's is not known.
func TestVersionEndpoint(t *testing.T) {
	store := &podStore{}
	for _, tc := range []struct {
		name       string
		containerd func(context.Context) (string, error)
		version    string
		why        string
	}{
		{"containerd answers", func(context.Context) (string, error) { return "v2.1.4", nil }, "v2.1.4", ""},
		{"containerd fails", func(context.Context) (string, error) { return "", errors.New("connection refused") }, "", "connection refused"},
		{"containerd hangs", func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }, "", "context deadline exceeded"},
		{"not wired", nil, "", "this podvisor does not say"},
	} {
		socket := filepath.Join(t.TempDir(), "s.sock")
		serveOpts(t, Options{Socket: socket, Store: store, ContainerdVersion: tc.containerd})
		got, err := NewClient(socket).Version(t.Context())
		want := &VersionInfo{Version: version.Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
			ContainerdVersion: tc.version, ContainerdError: tc.why}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Version = %+v, %v; want %+v", tc.name, got, err, want)
		}
	}
}
