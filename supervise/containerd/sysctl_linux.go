package containerd

import (
	"context"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// withSysctls sets the pod's sysctls (spec.securityContext.sysctls) in the
// container's linux.sysctl, names written with dots as kubelet passes them.
// The CRI sets them once, in the pause container that holds the pod's
// namespaces; a podvisor pod has no such container, so every container of
// the pod carries them and runc writes them as it starts the container,
// into the network and IPC namespaces all of them share: the first
// container to start (an init container, if any) has them set before its
// process runs, and later ones write the same values again. The node has
// admitted the pod's sysctls: none is in a namespace shared with the host.
func withSysctls(pod *v1.Pod) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		psc := pod.Spec.SecurityContext
		if psc == nil || len(psc.Sysctls) == 0 {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for _, c := range psc.Sysctls {
			s.Linux.Sysctl[utilsysctl.NormalizeName(c.Name)] = c.Value
		}
		return nil
	}
}
