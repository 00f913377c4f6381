package daemon

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// DefaultSeccompProfileRoot is --seccomp-profile-root's default, kubelet's
// (its root directory's seccomp): a node moved from kubelet keeps its
// profiles where they are.
const DefaultSeccompProfileRoot = "/var/lib/kubelet/seccomp"

// checkSeccompProfileRoot wants an absolute directory: a relative one
// would depend on where podvisor was started.
func checkSeccompProfileRoot(c *Config) error {
	if !filepath.IsAbs(c.SeccompProfileRoot) {
		return fmt.Errorf("%q is not an absolute directory", c.SeccompProfileRoot)
	}
	return nil
}

// seccompWarnings says, for `podvisor validate`, which containers name a
// Localhost seccomp profile that is not a readable file under c's
// --seccomp-profile-root: they would wait in CreateContainerError.
func seccompWarnings(c *Config, pod *v1.Pod) []string {
	var out []string
	check := func(path string, ctr *v1.Container) {
		p, field := (*v1.SeccompProfile)(nil), ""
		if sc := ctr.SecurityContext; sc != nil && sc.SeccompProfile != nil {
			p, field = sc.SeccompProfile, path+".securityContext.seccompProfile.localhostProfile"
		} else if psc := pod.Spec.SecurityContext; psc != nil && psc.SeccompProfile != nil {
			p, field = psc.SeccompProfile, "spec.securityContext.seccompProfile.localhostProfile"
		}
		if sc := ctr.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			return // a privileged container gets no profile
		}
		if p == nil || p.Type != v1.SeccompProfileTypeLocalhost || p.LocalhostProfile == nil {
			return
		}
		file := filepath.Join(c.SeccompProfileRoot, *p.LocalhostProfile)
		if _, err := os.ReadFile(file); err != nil {
			out = append(out, fmt.Sprintf("%s: container %s would wait in CreateContainerError: cannot load seccomp profile %q: %v", field, ctr.Name, file, err))
		}
	}
	for i := range pod.Spec.InitContainers {
		check(fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i])
	}
	return out
}
