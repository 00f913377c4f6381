package containerd

import v1 "k8s.io/api/core/v1"

// effectiveSecurityContext is the container's securityContext with the
// pod-level fields it does not set filled in, as the API defines them and
// kubelet's securitycontext.DetermineEffectiveSecurityContext applies them:
// a container-level value always wins. The result is a copy; the spec is
// not changed.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	sc := &v1.SecurityContext{}
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc
	}
	if sc.SELinuxOptions == nil && psc.SELinuxOptions != nil {
		sc.SELinuxOptions = psc.SELinuxOptions.DeepCopy()
	}
	if sc.WindowsOptions == nil && psc.WindowsOptions != nil {
		sc.WindowsOptions = psc.WindowsOptions.DeepCopy()
	}
	if sc.RunAsUser == nil && psc.RunAsUser != nil {
		v := *psc.RunAsUser
		sc.RunAsUser = &v
	}
	if sc.RunAsGroup == nil && psc.RunAsGroup != nil {
		v := *psc.RunAsGroup
		sc.RunAsGroup = &v
	}
	if sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil {
		v := *psc.RunAsNonRoot
		sc.RunAsNonRoot = &v
	}
	if sc.SeccompProfile == nil && psc.SeccompProfile != nil {
		sc.SeccompProfile = psc.SeccompProfile.DeepCopy()
	}
	if sc.AppArmorProfile == nil && psc.AppArmorProfile != nil {
		sc.AppArmorProfile = psc.AppArmorProfile.DeepCopy()
	}
	return sc
}

// supplementalGroups are the groups the pod adds to each container
// process, as kubelet's determineEffectiveSecurityContext lists them:
// fsGroup first, then supplementalGroups. A process in the fsGroup can use
// the volumes that group was given.
func supplementalGroups(psc *v1.PodSecurityContext) []int64 {
	if psc == nil {
		return nil
	}
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return append(groups, psc.SupplementalGroups...)
}

// strictGroups reports supplementalGroupsPolicy Strict: the process gets
// its primary group, fsGroup and supplementalGroups only, none of the
// groups the image's /etc/group gives its user (Merge, the default, adds
// those), as containerd's CRI plugin does for Strict.
func strictGroups(psc *v1.PodSecurityContext) bool {
	return psc != nil && psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict
}
