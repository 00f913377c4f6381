package containerd

import (
	"errors"
	"path/filepath"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/pkg/oci"
	v1 "k8s.io/api/core/v1"
)

// seccompOpts confines the container with the seccomp profile of its
// effective securityContext (the container's, else the pod's), as kubelet
// and containerd's CRI plugin do together: none when privileged or for
// Unconfined or none set (kubelet's default); containerd's default profile
// for RuntimeDefault; for Localhost, the JSON profile at localhostProfile
// under root (kubelet's --seccomp-profile-root), read when the container
// is created: a missing or unreadable file fails the create
// (CreateContainerError), naming the file.
func seccompOpts(p *v1.SeccompProfile, privileged bool, root string) ([]oci.SpecOpts, error) {
	if privileged || p == nil {
		return nil, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return []oci.SpecOpts{seccomp.WithDefaultProfile()}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost")
		}
		return []oci.SpecOpts{seccomp.WithProfile(filepath.Join(root, *p.LocalhostProfile))}, nil
	}
	return nil, nil
}
