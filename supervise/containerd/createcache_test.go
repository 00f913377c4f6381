package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// configImage is an oci.Image of one config blob, what containerd's
// oci.WithImageConfig reads.
type configImage struct {
	desc  ocispec.Descriptor
	store content.Store
}

func (i configImage) Config(context.Context) (ocispec.Descriptor, error) { return i.desc, nil }
func (i configImage) ContentStore() content.Store                        { return i.store }

func newConfigImage(t *testing.T, ctx context.Context, cfg ocispec.ImageConfig) configImage {
	t.Helper()
	store, err := local.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blob, err := json.Marshal(ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	if err := content.WriteBlob(ctx, store, "config", bytes.NewReader(blob), desc); err != nil {
		t.Fatal(err)
	}
	return configImage{desc, store}
}

// withImageConfig gives the environment, arguments and working directory
// containerd's oci.WithImageConfig gives, from the config Create read.
func TestWithImageConfigAsContainerd(t *testing.T) {
	ctx := namespaces.WithNamespace(context.Background(), "test")
	for _, tc := range []struct {
		name    string
		cfg     ocispec.ImageConfig
		specEnv []string
	}{
		{name: "no ENV: the default PATH", cfg: ocispec.ImageConfig{Cmd: []string{"sh"}}},
		{name: "ENV with PATH", cfg: ocispec.ImageConfig{Env: []string{"PATH=/opt/bin", "A=1"}, Entrypoint: []string{"/init"}, Cmd: []string{"-v"}, WorkingDir: "/srv"}},
		{name: "the spec's env over the image's", cfg: ocispec.ImageConfig{Env: []string{"A=1", "B=2"}, Cmd: []string{"sh"}}, specEnv: []string{"B=3", "C=4"}},
		{name: "the spec's env over the default", cfg: ocispec.ImageConfig{Entrypoint: []string{"/init"}}, specEnv: []string{"PATH=/x", "C=4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := func(opt oci.SpecOpts) *oci.Spec {
				t.Helper()
				s := &oci.Spec{}
				c := &containers.Container{ID: "x"}
				if err := oci.WithDefaultSpec()(ctx, nil, c, s); err != nil {
					t.Fatal(err)
				}
				// A rootfs without /etc/passwd: containerd's option looks
				// root's groups up there.
				s.Root.Path = t.TempDir()
				s.Process.Env = append([]string(nil), tc.specEnv...)
				if err := opt(ctx, nil, c, s); err != nil {
					t.Fatal(err)
				}
				return s
			}
			want := spec(oci.WithImageConfig(newConfigImage(t, ctx, tc.cfg))).Process
			got := spec(withImageConfig(tc.cfg)).Process
			if !reflect.DeepEqual(got.Env, want.Env) || !reflect.DeepEqual(got.Args, want.Args) || got.Cwd != want.Cwd {
				t.Errorf("env %q args %q cwd %q, containerd's option gives env %q args %q cwd %q", got.Env, got.Args, got.Cwd, want.Env, want.Args, want.Cwd)
			}
		})
	}
}

// An image's users are looked up in its rootfs once per image and USER:
// the next container of the image gets the same identity without a read
// (the files changed on disk in between are not seen), another image or
// user is looked up, and a failed look-up is not remembered.
func TestIdentitiesRemembered(t *testing.T) {
	ctx := namespaces.WithNamespace(context.Background(), "test")
	root := t.TempDir()
	write := func(passwd, group string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{"passwd": passwd, "group": group} {
			if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var ids identities
	apply := func(image string, id runAs) (uid, gid uint32, groups []uint32, err error) {
		s := &oci.Spec{Root: &specs.Root{Path: root}, Linux: &specs.Linux{}}
		err = ids.apply(ctx, nil, &containers.Container{ID: "x"}, s, image, id)
		if s.Process == nil {
			return 0, 0, nil, err
		}
		return s.Process.User.UID, s.Process.User.GID, s.Process.User.AdditionalGids, err
	}
	check := func(image string, id runAs, uid, gid uint32, groups ...uint32) {
		t.Helper()
		u, g, gs, err := apply(image, id)
		if err != nil || u != uid || g != gid || !reflect.DeepEqual(gs, groups) {
			t.Fatalf("%s as %q: uid %d gid %d groups %v (err %v), want %d %d %v", image, id.user, u, g, gs, err, uid, gid, groups)
		}
	}
	app := runAs{user: "app", groupsOf: "app"}
	write("app:x:1000:1000::/:/bin/sh\n", "wheel:x:10:app\napp:x:1000:\n")
	check("img@1", app, 1000, 1000, 1000, 10)

	// The rootfs of image 1 cannot change: what was found holds.
	write("app:x:2000:2000::/:/bin/sh\n", "staff:x:50:app\n")
	check("img@1", app, 1000, 1000, 1000, 10)
	// Another image, or another user in the same image, is looked up.
	check("img@2", app, 2000, 2000, 2000, 50)
	check("img@1", runAs{user: "app:50", groupsOf: "app"}, 2000, 50, 50)

	// A user the image lacks fails, and is looked up again next time.
	bob := runAs{user: "bob", groupsOf: "bob"}
	if _, _, _, err := apply("img@3", bob); err == nil {
		t.Fatal("a user missing from /etc/passwd was accepted")
	}
	write("bob:x:3000:3000::/:/bin/sh\n", "")
	check("img@3", bob, 3000, 3000, 3000)

	// No image ID (nothing says which rootfs it is): always looked up.
	check("", bob, 3000, 3000, 3000)
	write("bob:x:4000:4000::/:/bin/sh\n", "")
	check("", bob, 4000, 4000, 4000)
}

// A container waiting for another's look-up of the same image and user
// takes its answer; when the other's failed, it looks up for itself.
func TestIdentitiesWaiters(t *testing.T) {
	ctx := namespaces.WithNamespace(context.Background(), "test")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("app:x:1000:1000::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	app := runAs{user: "app", groupsOf: "app"}
	for _, tc := range []struct {
		name string
		ok   bool
		want specs.User
	}{
		{name: "the other found it", ok: true, want: specs.User{UID: 7, GID: 8, AdditionalGids: []uint32{8, 9}}},
		{name: "the other failed", ok: false, want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids identities
			e := &identityEntry{done: make(chan struct{})}
			ids.seen = map[identityKey]*identityEntry{{"img@1", app.user, app.groupsOf}: e}
			s := &oci.Spec{Root: &specs.Root{Path: root}, Linux: &specs.Linux{}}
			got := make(chan error, 1)
			go func() { got <- ids.apply(ctx, nil, &containers.Container{ID: "x"}, s, "img@1", app) }()
			e.user, e.ok = specs.User{UID: 7, GID: 8, AdditionalGids: []uint32{8, 9}}, tc.ok
			close(e.done)
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			if u := s.Process.User; !reflect.DeepEqual(u, tc.want) {
				t.Errorf("user %+v, want %+v", u, tc.want)
			}
		})
	}
}
