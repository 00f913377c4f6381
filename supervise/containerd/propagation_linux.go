package containerd

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// rootfsPropagation checks the sources of the container's bind mounts
// that ask for rslave (HostToContainer) or rshared (Bidirectional)
// propagation and returns the propagation of the container's root, as
// containerd's CRI WithMounts does: an rshared mount needs its source on
// a shared mount and makes the root rshared; an rslave one needs a shared
// or slave source and makes the root rslave unless it is already rshared;
// otherwise the root keeps runc's default ("" in the spec). lookup returns
// the mount holding a path (lookupMount).
func rootfsPropagation(ms []specs.Mount, lookup func(string) (*mountinfo.Info, error)) (string, error) {
	root := ""
	for _, m := range ms {
		if m.Type != "bind" {
			continue
		}
		switch {
		case slices.Contains(m.Options, "rshared"):
			if err := ensurePropagation(m.Source, lookup, "shared:"); err != nil {
				return "", err
			}
			root = "rshared"
		case slices.Contains(m.Options, "rslave"):
			if err := ensurePropagation(m.Source, lookup, "shared:", "master:"); err != nil {
				return "", err
			}
			if root != "rshared" {
				root = "rslave"
			}
		}
	}
	return root, nil
}

// ensurePropagation fails unless the mount holding path has one of the
// optional fields (mountinfo's "shared:N" for a shared mount, "master:N"
// for a slave), with containerd's ensureShared and ensureSharedOrSlave
// messages.
func ensurePropagation(path string, lookup func(string) (*mountinfo.Info, error), want ...string) error {
	info, err := lookup(path)
	if err != nil {
		return err
	}
	for _, opt := range strings.Fields(info.Optional) {
		for _, w := range want {
			if strings.HasPrefix(opt, w) {
				return nil
			}
		}
	}
	kind := "shared"
	if len(want) > 1 {
		kind = "shared or slave"
	}
	return fmt.Errorf("path %q is mounted on %q but it is not a %s mount", path, info.Mountpoint, kind)
}

// lookupMount returns the mount holding path, symlinks resolved: the
// longest mount point among path's parents in /proc/self/mountinfo, as
// containerd's mount.Lookup; of mounts stacked on that point, the last
// listed, the one on top that a bind mount of path would copy.
func lookupMount(path string) (*mountinfo.Info, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	ms, err := mountinfo.GetMounts(mountinfo.ParentsFilter(resolved))
	if err != nil {
		return nil, fmt.Errorf("failed to find the mount info for %q: %w", resolved, err)
	}
	var best *mountinfo.Info
	for _, m := range ms {
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("failed to find the mount info for %q", resolved)
	}
	return best, nil
}

// withRootfsPropagation sets the spec's rootfs propagation; "" leaves
// runc's default.
func withRootfsPropagation(p string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if p == "" {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		s.Linux.RootfsPropagation = p
		return nil
	}
}
