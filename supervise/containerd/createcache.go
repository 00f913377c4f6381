package containerd

import (
	"context"
	"slices"
	"sync"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// defaultPath is the environment a container gets when its image sets
// none, as containerd's image config option gives it.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// withImageConfig applies the image's config as containerd's
// oci.WithImageConfig does on Linux (its ENV under the spec's, its
// ENTRYPOINT and CMD, its WORKDIR or /), from the config Create has read
// once for the image. containerd's option reads the image's manifest and
// config from the content store again for each container, and then looks
// the image's USER up in the container's rootfs; withIdentity sets the
// user and groups anew after it, as the CRI plugin decides them, so that
// lookup is not made.
func withImageConfig(ic ocispec.ImageConfig) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		set := s.Process.Env
		s.Process.Env = slices.Clone(ic.Env)
		if len(s.Process.Env) == 0 {
			s.Process.Env = []string{defaultPath}
		}
		if err := oci.WithEnv(set)(ctx, cl, c, s); err != nil {
			return err
		}
		s.Process.Args = append(slices.Clone(ic.Entrypoint), ic.Cmd...)
		s.Process.Cwd = ic.WorkingDir
		if s.Process.Cwd == "" {
			s.Process.Cwd = "/"
		}
		return nil
	}
}

// withNewSnapshot prepares the container's rootfs from its image's
// layers, as client.WithSnapshotter and client.WithNewSnapshot do without
// snapshot options: containerd's option asks for the snapshotter's
// capabilities first, for each container, which only matter to the ID
// mapping options podvisor does not pass.
func withNewSnapshot(id string, img client.Image, snapshotter string) client.NewContainerOpts {
	return func(ctx context.Context, cl *client.Client, c *containers.Container) error {
		diffIDs, err := img.RootFS(ctx)
		if err != nil {
			return err
		}
		if _, err := cl.SnapshotService(snapshotter).Prepare(ctx, id, identity.ChainID(diffIDs).String()); err != nil {
			return err
		}
		c.Snapshotter, c.SnapshotKey, c.Image = snapshotter, id, img.Name()
		return nil
	}
}

// identities remembers the user and groups containerd's options found in
// an image's /etc/passwd and /etc/group: a new container's rootfs is a
// fresh snapshot of its image, so for one image (by digest) and one
// USER the answer is the same, and each look-up costs a request for the
// snapshot's mounts and a read of both files through its layers. The
// first container of an image and user looks them up; those created
// meanwhile wait for its answer rather than each asking (a pod's
// containers, thirty pods of one image started at once). A failed
// look-up is not remembered.
type identities struct {
	mu   sync.Mutex
	seen map[identityKey]*identityEntry
}

type identityKey struct{ image, user, groupsOf string }

type identityEntry struct {
	done chan struct{}
	ok   bool
	user specs.User // UID, GID, AdditionalGids
}

// apply sets s's user as the identity options do on image's rootfs
// (withIdentity's options but supplementalGroups), looking it up only
// when no container of the image has yet.
func (ids *identities) apply(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec, image string, id runAs) error {
	lookup := func() error {
		groups := oci.WithAdditionalGIDs(id.groupsOf)
		if id.groupsOf == "" {
			groups = withPrimaryGroupOnly
		}
		for _, o := range []oci.SpecOpts{oci.WithUser(id.user), groups} {
			if err := o(ctx, cl, c, s); err != nil {
				return err
			}
		}
		return nil
	}
	if ids == nil || image == "" {
		return lookup()
	}
	k := identityKey{image, id.user, id.groupsOf}
	ids.mu.Lock()
	if ids.seen == nil {
		ids.seen = map[identityKey]*identityEntry{}
	}
	e, found := ids.seen[k]
	if !found {
		e = &identityEntry{done: make(chan struct{})}
		ids.seen[k] = e
	}
	ids.mu.Unlock()
	if found {
		select {
		case <-e.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !e.ok {
			return lookup()
		}
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.User.UID, s.Process.User.GID = e.user.UID, e.user.GID
		s.Process.User.AdditionalGids = slices.Clone(e.user.AdditionalGids)
		return nil
	}
	err := lookup()
	ids.mu.Lock()
	if err == nil {
		u := s.Process.User
		e.user, e.ok = specs.User{UID: u.UID, GID: u.GID, AdditionalGids: slices.Clone(u.AdditionalGids)}, true
	} else {
		delete(ids.seen, k)
	}
	ids.mu.Unlock()
	close(e.done)
	return err
}
