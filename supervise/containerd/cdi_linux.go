package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podvisor/podvisor/internal/cdidev"
	"github.com/podvisor/podvisor/supervise"
)

// DeviceInjector applies CDI devices to a container's OCI spec
// (*cdidev.Registry).
type DeviceInjector interface {
	Inject(spec *specs.Spec, devices []string) error
}

var _ DeviceInjector = (*cdidev.Registry)(nil)

// withCDIDevices injects the container's CDI devices: device nodes (and
// their device cgroup rules), env, mounts and hooks, as containerd's CRI
// plugin does, after every other option so nothing resets them. A device
// no spec defines any more refuses the container (CreateContainerConfigError).
func withCDIDevices(inj DeviceInjector, devices []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(devices) == 0 {
			return nil
		}
		if inj == nil {
			return fmt.Errorf("%w: CDI devices %v asked for, and no CDI spec dirs are configured", supervise.ErrContainerConfig, devices)
		}
		if err := inj.Inject(s, devices); err != nil {
			return fmt.Errorf("%w: %v", supervise.ErrContainerConfig, err)
		}
		return nil
	}
}
