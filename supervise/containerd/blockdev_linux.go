package containerd

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podvisor/podvisor/supervise"
)

// withBlockDevices adds the container's raw block volumes as containerd's
// CRI adds the devices kubelet passes: oci.WithDevices, giving the device
// node at its container path (type, major and minor, mode and owner as on
// the host) and a device cgroup rule allowing it with the given access.
// Privileged containers get them too, and in their place: a host device
// the privileged option put at the same container path is dropped (runc
// makes the first node of a path), as the CRI gives the pod's devices
// before the host's. It comes after every other option (beside the CDI
// devices) so nothing resets them.
func withBlockDevices(devices []supervise.BlockDevice) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if len(devices) == 0 {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		for _, d := range devices {
			path := filepath.Clean(d.ContainerPath)
			s.Linux.Devices = slices.DeleteFunc(s.Linux.Devices, func(dev specs.LinuxDevice) bool { return filepath.Clean(dev.Path) == path })
			if err := oci.WithDevices(d.HostPath, d.ContainerPath, d.Permissions)(ctx, client, c, s); err != nil {
				return fmt.Errorf("block device %s at %s: %w", d.HostPath, d.ContainerPath, err)
			}
		}
		return nil
	}
}
