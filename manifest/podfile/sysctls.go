package podfile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	policyvalidation "k8s.io/kubernetes/pkg/apis/policy/validation"
)

// SysctlForbiddenReason is the reason of a pod whose sysctls the node
// refuses, kubelet's: the pod is not run and its phase is Failed.
const SysctlForbiddenReason = "SysctlForbidden"

// safeSysctl is one of kubelet's safe sysctls: namespaced, and with no
// effect on other pods. kernel, when set, is the first kernel release in
// which the sysctl is namespaced; on an older kernel it is not safe.
type safeSysctl struct {
	name   string
	kernel string
}

// safeSysctls are kubelet's safe sysctls (pkg/kubelet/sysctl), with the
// kernel releases that namespaced them.
var safeSysctls = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", kernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", kernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", kernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", kernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", kernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_slow_start_after_idle", kernel: "4.15"},
	{name: "net.ipv4.tcp_notsent_lowat", kernel: "4.6"},
}

// SafeSysctls returns the safe sysctls on a kernel of the given release
// (uname -r, /proc/sys/kernel/osrelease), as kubelet lists them: those
// namespaced only from a later release are left out, and so are all that
// need a release when it cannot be read.
func SafeSysctls(release string) []string {
	kv, err := version.ParseGeneric(release)
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || (err == nil && kv.AtLeast(version.MustParseGeneric(s.kernel))) {
			out = append(out, s.name)
		}
	}
	return out
}

// IsSafeSysctl reports whether name (dots or slashes) is one of kubelet's
// safe sysctls on some kernel.
func IsSafeSysctl(name string) bool {
	name = utilsysctl.NormalizeName(name)
	return slices.ContainsFunc(safeSysctls, func(s safeSysctl) bool { return s.name == name })
}

// SysctlAllowlist is the sysctls a node lets pods set, as kubelet's
// allowlist holds them: names, and prefixes from patterns ending in "*",
// each with the namespace it belongs to (IPC, Net or User). A sysctl in
// no namespace (vm.*, kernel.pid_max) changes the whole node and can never
// be allowed.
type SysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewSysctlAllowlist makes the allowlist of the patterns (kubelet's safe
// sysctls and --allowed-unsafe-sysctls), refusing, with kubelet's
// messages, a pattern that is not a sysctl name, or a "prefix*" glob, or
// that names sysctls not known to be namespaced.
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	a := &SysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if !policyvalidation.IsValidSysctlPattern(p) {
			return nil, fmt.Errorf("sysctl %q must have at most 253 characters and match regex %s", p, policyvalidation.SysctlContainSlashPatternFmt)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			a.prefixes[nameOrPrefix] = ns
		} else {
			a.names[nameOrPrefix] = ns
		}
	}
	return a, nil
}

// check says why the pod may not set the sysctl, with kubelet's wording:
// it is allowed, and its namespace is the pod's own (not the host's
// network, IPC or user namespace).
func (a *SysctlAllowlist) check(name string, hostNet, hostIPC, hostUsers bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, ok := a.names[name]
	if !ok {
		for _, p := range slices.Sorted(maps.Keys(a.prefixes)) {
			if strings.HasPrefix(name, p) {
				ns, ok = a.prefixes[p], true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if (ns == utilsysctl.IPCNamespace && hostIPC) || (ns == utilsysctl.NetNamespace && hostNet) || (ns == utilsysctl.UserNamespace && hostUsers) {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// Admit returns why the node refuses to run the pod for its sysctls, in
// kubelet's words ("forbidden sysctl: ..."; the reason is
// SysctlForbiddenReason), or nil when every sysctl is allowed.
func (a *SysctlAllowlist) Admit(pod *v1.Pod) error {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range sc.Sysctls {
		if err := a.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return fmt.Errorf("forbidden sysctl: %w", err)
		}
	}
	return nil
}
