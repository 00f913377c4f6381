package rollout

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// BroaderPrivileges lists what the revision's pod spec grants that the
// current one does not, one privilege an entry ("hostNetwork", "volume
// data: hostPath /etc", "container app: privileged"); nil when it asks
// for nothing more. It compares the effective security of each container
// with the current container of the same name (a container the current
// spec does not have is compared with one that sets nothing, under the
// current pod's securityContext). Deciding what the node may run is
// root's, through the manifest: a revision kept from before root narrowed
// the file must not widen it again.
func BroaderPrivileges(current, revision *v1.PodSpec) []string {
	var out []string
	for _, h := range []struct {
		name     string
		cur, rev bool
	}{
		{"hostNetwork", current.HostNetwork, revision.HostNetwork},
		{"hostPID", current.HostPID, revision.HostPID},
		{"hostIPC", current.HostIPC, revision.HostIPC},
		// No user namespace (hostUsers true, the default) maps the
		// container's root to the host's.
		{"hostUsers (no user namespace)", orTrue(current.HostUsers), orTrue(revision.HostUsers)},
	} {
		if h.rev && !h.cur {
			out = append(out, h.name)
		}
	}
	out = append(out, broaderHostPaths(current, revision)...)
	for _, rc := range allContainers(revision) {
		cc := findContainer(current, rc.Name)
		if cc == nil {
			cc = &v1.Container{Name: rc.Name}
		}
		for _, p := range broaderContainer(effective(current, cc), effective(revision, rc)) {
			out = append(out, "container "+rc.Name+": "+p)
		}
	}
	return out
}

// broaderHostPaths are the revision's hostPath volumes that reach a host
// path no current hostPath volume covers (the same path or one of its
// parents), or that mount it writable where every current volume covering
// it is mounted read-only.
func broaderHostPaths(current, revision *v1.PodSpec) []string {
	type hostPath struct {
		path     string
		writable bool
	}
	var cur []hostPath
	for _, v := range current.Volumes {
		if v.HostPath != nil {
			cur = append(cur, hostPath{filepath.Clean(v.HostPath.Path), writable(current, v.Name)})
		}
	}
	var out []string
	for _, v := range revision.Volumes {
		if v.HostPath == nil {
			continue
		}
		p, w := filepath.Clean(v.HostPath.Path), writable(revision, v.Name)
		covered, coveredWritable := false, false
		for _, c := range cur {
			if within(p, c.path) {
				covered = true
				coveredWritable = coveredWritable || c.writable
			}
		}
		switch {
		case !covered:
			out = append(out, fmt.Sprintf("volume %s: hostPath %s", v.Name, p))
		case w && !coveredWritable:
			out = append(out, fmt.Sprintf("volume %s: hostPath %s writable (read-only in the manifest)", v.Name, p))
		}
	}
	return out
}

// within: path is dir or below it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// writable: some container of spec mounts volume name read-write.
func writable(spec *v1.PodSpec, name string) bool {
	for _, c := range allContainers(spec) {
		for _, m := range c.VolumeMounts {
			if m.Name == name && !m.ReadOnly {
				return true
			}
		}
	}
	return false
}

func allContainers(spec *v1.PodSpec) []*v1.Container {
	var out []*v1.Container
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

func findContainer(spec *v1.PodSpec, name string) *v1.Container {
	for _, c := range allContainers(spec) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// effective is c's securityContext with the pod-level fields it does not
// set filled in: a container-level value wins, as the API defines it.
func effective(spec *v1.PodSpec, c *v1.Container) v1.SecurityContext {
	var sc v1.SecurityContext
	if c.SecurityContext != nil {
		sc = *c.SecurityContext
	}
	psc := spec.SecurityContext
	if psc == nil {
		return sc
	}
	if sc.RunAsUser == nil {
		sc.RunAsUser = psc.RunAsUser
	}
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = psc.RunAsNonRoot
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = psc.SeccompProfile
	}
	if sc.AppArmorProfile == nil {
		sc.AppArmorProfile = psc.AppArmorProfile
	}
	return sc
}

// broaderContainer compares two effective securityContexts.
func broaderContainer(cur, rev v1.SecurityContext) []string {
	var out []string
	if mayRunAsRoot(rev) && !mayRunAsRoot(cur) {
		switch {
		case rev.RunAsUser != nil:
			out = append(out, "runAsUser 0 (root)")
		case isTrue(cur.RunAsNonRoot):
			out = append(out, "runAsNonRoot dropped: runs as the image's user, which may be root")
		default:
			out = append(out, fmt.Sprintf("runAsUser unset: runs as the image's user, which may be root (the manifest's: %d)", *cur.RunAsUser))
		}
	}
	if isTrue(cur.Privileged) {
		// Privileged already grants every capability, no seccomp or
		// AppArmor confinement, and escalation.
		return out
	}
	if isTrue(rev.Privileged) {
		return append(out, "privileged")
	}
	out = append(out, broaderCapabilities(cur.Capabilities, rev.Capabilities)...)
	if cur.AllowPrivilegeEscalation != nil && !*cur.AllowPrivilegeEscalation && orTrue(rev.AllowPrivilegeEscalation) {
		// Kubernetes' default is true: no_new_privs only when false.
		out = append(out, "allowPrivilegeEscalation true (false in the manifest)")
	}
	if procMount(rev) == v1.UnmaskedProcMount && procMount(cur) != v1.UnmaskedProcMount {
		out = append(out, "procMount Unmasked")
	}
	if seccompConfined(cur) && !seccompConfined(rev) {
		out = append(out, "seccompProfile Unconfined")
	}
	if rev.AppArmorProfile != nil && rev.AppArmorProfile.Type == v1.AppArmorProfileTypeUnconfined &&
		(cur.AppArmorProfile == nil || cur.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined) {
		out = append(out, "appArmorProfile Unconfined")
	}
	return out
}

// broaderCapabilities: capabilities the revision adds that the current
// does not, and those the current drops that the revision keeps.
func broaderCapabilities(cur, rev *v1.Capabilities) []string {
	if cur == nil {
		cur = &v1.Capabilities{}
	}
	if rev == nil {
		rev = &v1.Capabilities{}
	}
	curAdd, revAdd := capSet(cur.Add), capSet(rev.Add)
	curDrop, revDrop := capSet(cur.Drop), capSet(rev.Drop)
	var out []string
	if !slices.Contains(curAdd, "ALL") {
		for _, c := range revAdd {
			if !slices.Contains(curAdd, c) {
				out = append(out, "capability "+c+" added")
			}
		}
	}
	if slices.Contains(revDrop, "ALL") {
		return out
	}
	if slices.Contains(curDrop, "ALL") {
		return append(out, "capabilities: the runtime's defaults kept (the manifest drops ALL)")
	}
	for _, c := range curDrop {
		if !slices.Contains(revDrop, c) && !slices.Contains(revAdd, c) {
			out = append(out, "capability "+c+" not dropped")
		}
	}
	return out
}

// capSet is the names as Kubernetes writes them (NET_ADMIN), sorted, once
// each.
func capSet(cs []v1.Capability) []string {
	var out []string
	for _, c := range cs {
		out = append(out, strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// mayRunAsRoot: the container's process may be uid 0 — asked for, or the
// image's user with nothing requiring it not to be root.
func mayRunAsRoot(sc v1.SecurityContext) bool {
	if isTrue(sc.RunAsNonRoot) {
		return false // kubelet refuses to start it as root
	}
	return sc.RunAsUser == nil || *sc.RunAsUser == 0
}

func procMount(sc v1.SecurityContext) v1.ProcMountType {
	if sc.ProcMount == nil {
		return v1.DefaultProcMount
	}
	return *sc.ProcMount
}

// seccompConfined: a seccomp profile applies (kubelet's default is none).
func seccompConfined(sc v1.SecurityContext) bool {
	return sc.SeccompProfile != nil && sc.SeccompProfile.Type != v1.SeccompProfileTypeUnconfined
}

func isTrue(b *bool) bool { return b != nil && *b }

// orTrue is *b, true when unset.
func orTrue(b *bool) bool { return b == nil || *b }
