package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/supervise"
)

var _ supervise.UserReporter = (*Runtime)(nil)

// captureUser, the last of a container's spec options, copies the
// identity its process ends up with to dst.
func captureUser(dst *specs.User) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process != nil {
			*dst = s.Process.User
		}
		return nil
	}
}

// rememberUser keeps the identity Create gave container id until
// ContainerUser asks for it.
func (r *Runtime) rememberUser(id string, u specs.User) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.users == nil {
		r.users = map[string]specs.User{}
	}
	r.users[id] = u
}

// ContainerUser returns the identity container id's process runs with (its
// spec's user: uid, gid and supplementary groups), as containerd's CRI
// plugin reports it for kubelet's containerStatuses[].user: from what
// Create just computed, else from the container's spec.
func (r *Runtime) ContainerUser(ctx context.Context, id string) (_ *v1.ContainerUser, err error) {
	defer markUnavailable(&err)
	r.mu.Lock()
	u, ok := r.users[id]
	delete(r.users, id)
	r.mu.Unlock()
	if !ok {
		ctr, err := r.client.LoadContainer(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("load container %s: %w", id, err)
		}
		s, err := ctr.Spec(ctx)
		if err != nil {
			return nil, fmt.Errorf("container %s spec: %w", id, err)
		}
		if s.Process == nil {
			return nil, fmt.Errorf("container %s has no process", id)
		}
		u = s.Process.User
	}
	return containerUser(u), nil
}

// containerUser is an OCI user as the API reports it.
func containerUser(u specs.User) *v1.ContainerUser {
	l := &v1.LinuxContainerUser{UID: int64(u.UID), GID: int64(u.GID)}
	for _, g := range u.AdditionalGids {
		l.SupplementalGroups = append(l.SupplementalGroups, int64(g))
	}
	return &v1.ContainerUser{Linux: l}
}
