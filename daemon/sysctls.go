package daemon

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"

	"github.com/podvisor/podvisor/manifest/podfile"
	"github.com/podvisor/podvisor/supervise"
)

// kernelRelease is the running kernel's release, where kubelet reads it to
// tell which sysctls this kernel namespaces ("" when it cannot be read:
// then only the sysctls namespaced by every kernel are safe).
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// unsafeSysctls are the patterns of --allowed-unsafe-sysctls.
func (c *Config) unsafeSysctls() []string {
	var out []string
	for _, p := range strings.Split(c.AllowedUnsafeSysctls, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// sysctlAllowlist is the sysctls pods may set on this node, kubelet's: its
// safe sysctls for this kernel and --allowed-unsafe-sysctls.
func (c *Config) sysctlAllowlist() (*podfile.SysctlAllowlist, error) {
	return podfile.NewSysctlAllowlist(append(podfile.SafeSysctls(kernelRelease()), c.unsafeSysctls()...))
}

// checkAllowedUnsafeSysctls refuses what kubelet refuses at its start:
// a pattern that is not a sysctl name or a "prefix*" glob, or sysctls not
// known to be namespaced (vm.*, kernel.pid_max: they would change the
// whole node).
func checkAllowedUnsafeSysctls(c *Config) error {
	_, err := podfile.NewSysctlAllowlist(c.unsafeSysctls())
	return err
}

// admitPod is the node's admission of a pod about to start: its sysctls,
// as kubelet's sysctls admit handler decides.
func admitPod(allow *podfile.SysctlAllowlist) supervise.AdmitFunc {
	return func(pod *v1.Pod) (string, string) {
		if err := allow.Admit(pod); err != nil {
			return podfile.SysctlForbiddenReason, err.Error()
		}
		return "", ""
	}
}

// sysctlWarnings says, for `podvisor validate`, which of the pod's
// sysctls this node (kubelet's safe sysctls for this kernel and c's
// --allowed-unsafe-sysctls) refuses: the pod would fail with
// SysctlForbidden.
func sysctlWarnings(c *Config, pod *v1.Pod) []string {
	psc := pod.Spec.SecurityContext
	if psc == nil || len(psc.Sysctls) == 0 {
		return nil
	}
	allow, err := c.sysctlAllowlist()
	if err != nil {
		return nil // Validate names the bad flag
	}
	var out []string
	for i, s := range psc.Sysctls {
		one := pod.DeepCopy()
		one.Spec.SecurityContext.Sysctls = []v1.Sysctl{s}
		err := allow.Admit(one)
		if err == nil {
			continue
		}
		hint := "allow it with --allowed-unsafe-sysctls (allowedUnsafeSysctls)"
		switch ns, _, _ := utilsysctl.GetNamespace(s.Name); {
		case ns == utilsysctl.UnknownNamespace:
			hint = "it is not namespaced: it would change the whole node, and no node allows it"
		case strings.Contains(err.Error(), "not allowed with host"):
			hint = "the pod shares that namespace with the host"
		}
		out = append(out, fmt.Sprintf("spec.securityContext.sysctls[%d].name: the pod would fail with %s (%v): %s", i, podfile.SysctlForbiddenReason, err, hint))
	}
	return out
}

// listFlags are the flags, comma-separated on the command line, that a
// configuration file may give as a list, as KubeletConfiguration's
// allowedUnsafeSysctls: ["kernel.msg*", "net.core.somaxconn"].
var listFlags = map[string]bool{
	"allowed-unsafe-sysctls": true,
}

// listValue is a configuration file's list as its flag's comma-separated
// form.
func listValue(v *yaml.Node) (string, error) {
	var parts []string
	for _, it := range v.Content {
		if it.Kind != yaml.ScalarNode || it.Value == "" || strings.Contains(it.Value, ",") {
			return "", fmt.Errorf("line %d: want a list of strings", it.Line)
		}
		parts = append(parts, it.Value)
	}
	return strings.Join(parts, ","), nil
}
