package rollout

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// BroaderPrivileges lists what the revision's pod grants that the current
// one does not, one privilege an entry ("hostNetwork", "volume data:
// hostPath /etc", "container app: privileged"); nil when it asks for
// nothing more. It compares the effective security of each container
// with the current container of the same name (a container the current
// spec does not have is compared with one that sets nothing, under the
// current pod's securityContext), and, besides the spec, the pods' CDI
// device annotations (cdi.k8s.io/*). Deciding what the node may run is
// root's, through the manifest: a revision kept from before root narrowed
// the file must not widen it again.
func BroaderPrivileges(currentPod, revisionPod *v1.Pod) []string {
	current, revision := &currentPod.Spec, &revisionPod.Spec
	var out []string
	if cur, rev := deref(current.RuntimeClassName), deref(revision.RuntimeClassName); cur != rev {
		// Another runtime handler: another runtime binary and base spec.
		out = append(out, fmt.Sprintf("runtimeClassName %s (the manifest's: %s)", orUnset(rev), orUnset(cur)))
	}
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
		// Each container sees, and may signal or ptrace, the others'
		// processes, and reads their root filesystems through /proc.
		{"shareProcessNamespace", isTrue(current.ShareProcessNamespace), isTrue(revision.ShareProcessNamespace)},
	} {
		if h.rev && !h.cur {
			out = append(out, h.name)
		}
	}
	out = append(out, broaderPodSecurity(current.SecurityContext, revision.SecurityContext)...)
	out = append(out, broaderCDIAnnotations(currentPod.Annotations, revisionPod.Annotations)...)
	out = append(out, broaderHostPaths(current, revision)...)
	out = append(out, broaderVolumes(current, revision)...)
	for _, rc := range allContainers(revision) {
		cc := findContainer(current, rc.Name)
		if cc == nil {
			cc = &v1.Container{Name: rc.Name}
		}
		for _, p := range broaderContainer(effective(current, cc), effective(revision, rc)) {
			out = append(out, "container "+rc.Name+": "+p)
		}
		for _, p := range broaderResources(cc, rc) {
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
	if sc.SELinuxOptions == nil {
		sc.SELinuxOptions = psc.SELinuxOptions
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
	if p := localhostProfile(rev); p != "" && seccompConfined(cur) && p != localhostProfile(cur) {
		// Another profile file under the kubelet's seccomp directory: what
		// it allows is not the manifest's.
		out = append(out, fmt.Sprintf("seccompProfile Localhost %s (the manifest's: %s)", p, seccompString(cur)))
	}
	if cur, rev := seLinuxString(cur.SELinuxOptions), seLinuxString(rev.SELinuxOptions); cur != rev {
		// Another SELinux label: another set of files and processes the
		// container may reach.
		out = append(out, fmt.Sprintf("seLinuxOptions %s (the manifest's: %s)", rev, cur))
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

// broaderPodSecurity compares the pod-level securityContext fields that
// have no container-level counterpart.
func broaderPodSecurity(cur, rev *v1.PodSecurityContext) []string {
	if cur == nil {
		cur = &v1.PodSecurityContext{}
	}
	if rev == nil {
		rev = &v1.PodSecurityContext{}
	}
	var out []string
	for _, s := range rev.Sysctls {
		i := slices.IndexFunc(cur.Sysctls, func(c v1.Sysctl) bool { return c.Name == s.Name })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("sysctl %s=%s", s.Name, s.Value))
		case cur.Sysctls[i].Value != s.Value:
			out = append(out, fmt.Sprintf("sysctl %s=%s (the manifest's: %s)", s.Name, s.Value, cur.Sysctls[i].Value))
		}
	}
	// Merge (the default) adds the groups the image's /etc/group gives the
	// user to those the manifest lists; Strict keeps only the latter.
	if supplementalGroupsPolicy(rev) == v1.SupplementalGroupsPolicyMerge && supplementalGroupsPolicy(cur) == v1.SupplementalGroupsPolicyStrict {
		out = append(out, "supplementalGroupsPolicy Merge (Strict in the manifest)")
	}
	return out
}

func supplementalGroupsPolicy(psc *v1.PodSecurityContext) v1.SupplementalGroupsPolicy {
	if psc.SupplementalGroupsPolicy == nil {
		return v1.SupplementalGroupsPolicyMerge
	}
	return *psc.SupplementalGroupsPolicy
}

// cdiAnnotationPrefix is the pod annotations naming CDI devices to inject
// into every container.
const cdiAnnotationPrefix = "cdi.k8s.io/"

// broaderCDIAnnotations: CDI device annotations the revision has that the
// manifest does not, or whose device list differs.
func broaderCDIAnnotations(cur, rev map[string]string) []string {
	var keys []string
	for k := range rev {
		if strings.HasPrefix(k, cdiAnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		c, ok := cur[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("annotation %s: %s", k, rev[k]))
		case c != rev[k]:
			out = append(out, fmt.Sprintf("annotation %s: %s (the manifest's: %s)", k, rev[k], c))
		}
	}
	return out
}

// broaderVolumes are the revision's persistentVolumeClaim volumes of a
// claim, and image volumes of a reference, no current volume uses.
func broaderVolumes(current, revision *v1.PodSpec) []string {
	var claims, images []string
	for _, v := range current.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
		}
		if v.Image != nil {
			images = append(images, v.Image.Reference)
		}
	}
	var out []string
	for _, v := range revision.Volumes {
		if v.PersistentVolumeClaim != nil && !slices.Contains(claims, v.PersistentVolumeClaim.ClaimName) {
			out = append(out, fmt.Sprintf("volume %s: persistentVolumeClaim %s", v.Name, v.PersistentVolumeClaim.ClaimName))
		}
		if v.Image != nil && !slices.Contains(images, v.Image.Reference) {
			out = append(out, fmt.Sprintf("volume %s: image %s", v.Name, v.Image.Reference))
		}
	}
	return out
}

// broaderResources: extended resources (devices and the like: any name
// but cpu, memory, ephemeral-storage and hugepages-*) rev asks for that
// cur does not, or more of them. What a container gets is the larger of
// its limit and request.
func broaderResources(cur, rev *v1.Container) []string {
	curAmounts, revAmounts := extendedResources(cur), extendedResources(rev)
	var names []string
	for n := range revAmounts {
		names = append(names, string(n))
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		r := revAmounts[v1.ResourceName(n)]
		c, ok := curAmounts[v1.ResourceName(n)]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("resource %s %s", n, r.String()))
		case r.Cmp(c) > 0:
			out = append(out, fmt.Sprintf("resource %s %s (the manifest's: %s)", n, r.String(), c.String()))
		}
	}
	return out
}

func extendedResources(c *v1.Container) map[v1.ResourceName]resource.Quantity {
	out := map[v1.ResourceName]resource.Quantity{}
	for _, l := range []v1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for n, q := range l {
			if !extended(n) || q.IsZero() {
				continue
			}
			if have, ok := out[n]; !ok || q.Cmp(have) > 0 {
				out[n] = q
			}
		}
	}
	return out
}

func extended(n v1.ResourceName) bool {
	switch n {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return false
	}
	return !strings.HasPrefix(string(n), v1.ResourceHugePagesPrefix)
}

// localhostProfile is the Localhost seccomp profile of sc, "" when it has
// another kind.
func localhostProfile(sc v1.SecurityContext) string {
	if p := sc.SeccompProfile; p != nil && p.Type == v1.SeccompProfileTypeLocalhost {
		return deref(p.LocalhostProfile)
	}
	return ""
}

func seccompString(sc v1.SecurityContext) string {
	if p := localhostProfile(sc); p != "" {
		return "Localhost " + p
	}
	return string(sc.SeccompProfile.Type)
}

// seLinuxString writes o as "user=u role=r type=t level=l", the fields
// set only; "unset" when none is.
func seLinuxString(o *v1.SELinuxOptions) string {
	if o == nil {
		return "unset"
	}
	var fs []string
	for _, f := range []struct{ k, v string }{{"user", o.User}, {"role", o.Role}, {"type", o.Type}, {"level", o.Level}} {
		if f.v != "" {
			fs = append(fs, f.k+"="+f.v)
		}
	}
	if len(fs) == 0 {
		return "unset"
	}
	return strings.Join(fs, " ")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}
