package containerd

import (
	"context"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podvisor/podvisor/internal/cgroupfs"
)

// swapAccounted reports whether the kernel accounts swap for cgroups below
// root, so that a limit on memory plus swap can be set: on cgroup v1 the
// memory hierarchy has memory.memsw.limit_in_bytes; on v2 the container's
// parent (cgroupsPath's directory, the pod's cgroup, or the nearest
// ancestor that exists) has memory.swap.max. The CRI plugin asks the same
// of its own cgroup (internal/cri/opts SwapControllerAvailable).
func swapAccounted(root, cgroupsPath string) bool {
	if !cgroupfs.IsV2(root) {
		return exists(filepath.Join(root, "memory", "memory.memsw.limit_in_bytes"))
	}
	for dir := filepath.Dir(filepath.Clean("/" + cgroupsPath)); dir != "/"; dir = filepath.Dir(dir) {
		p := filepath.Join(root, dir)
		if exists(p) {
			return exists(filepath.Join(p, "memory.swap.max"))
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// withNoSwap makes a memory limit hard, as the CRI plugin does for a
// container with a limit ("swap/memory limit should be equal to prevent
// container from swapping by default"): memory plus swap equals the limit,
// which runc writes as memory.memsw.limit_in_bytes = limit on v1 and
// memory.swap.max = 0 on v2.
func withNoSwap(limit int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		if s.Linux.Resources.Memory == nil {
			s.Linux.Resources.Memory = &specs.LinuxMemory{}
		}
		swap := limit
		s.Linux.Resources.Memory.Swap = &swap
		return nil
	}
}
