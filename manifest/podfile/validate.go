package podfile

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// problems collects the errors and warnings of one pod, with field paths
// relative to the pod; parse.go turns them into FileErrors with lines.
type problems struct {
	errs  []fieldErr
	warns []string
}

type fieldErr struct {
	field, reason string
	value         string // the bad value when it is a string, to place an error whose path lacks an index
}

func (p *problems) invalid(field, reason string) {
	p.errs = append(p.errs, fieldErr{field: field, reason: reason})
}

func (p *problems) invalidf(field, format string, args ...any) {
	p.invalid(field, fmt.Sprintf(format, args...))
}

func (p *problems) warn(w string) {
	p.warns = append(p.warns, w)
}

// maxHostnameLen is the limit kubelet truncates a pod hostname to.
const maxHostnameLen = 63

// defaultedRequests lists the requests that defaulting will copy from a
// limit, in a pod before defaulting: an error of the request would repeat
// its limit's.
func defaultedRequests(spec *v1.PodSpec) []string {
	var out []string
	for _, list := range []struct {
		name string
		ctrs []v1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i, c := range list.ctrs {
			for _, name := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
				if _, ok := c.Resources.Requests[name]; !ok {
					out = append(out, fmt.Sprintf("spec.%s[%d].resources.requests[%s]", list.name, i, name))
				}
			}
		}
	}
	return out
}

// validatePod checks a defaulted pod whose identity is applied; baseName is
// metadata.name as the user wrote it, rejected lists the field paths the
// field table rejected (Kubernetes' errors about them are not repeated).
//
// Kubernetes' own validation (validateKubernetes) does the checking the
// apiserver and kubelet do; what is here is podvisor's own: what a pod that
// Kubernetes accepts still needs to run under podvisor (absolute paths that
// the runtime resolves, a log directory that fits in a file name,
// quantities that fit in int64 cgroup arithmetic).
func validatePod(pod *v1.Pod, baseName string, rejected []string, p *problems) {
	skip := rejected
	// kubelet refuses a pod without a name before it appends the node
	// ("name is needed for the pod"); "-<node>" is not worth a second error.
	if baseName == "" {
		p.invalid("metadata.name", "Required value")
		skip = append(slices.Clip(skip), "metadata.name")
	}
	before := len(p.errs)
	validateKubernetes(pod, skip, p)
	nameOK := baseName != "" && !slices.ContainsFunc(p.errs[before:], func(e fieldErr) bool {
		return e.field == "metadata.name" || e.field == "metadata.namespace"
	})
	if nameOK { // a name that is already wrong says so once
		validateLogDir(pod, p)
		// The full name is also the pod's hostname: kubelet truncates it to
		// 63 characters when spec.hostname is empty.
		if pod.Spec.Hostname == "" && pod.Spec.HostnameOverride == nil && len(pod.Name) > maxHostnameLen {
			p.warn(fmt.Sprintf("metadata.name: the pod hostname will be %q, the static pod name truncated to %d characters; set spec.hostname to choose it",
				truncateHostname(pod.Name), maxHostnameLen))
		}
	}

	validateWaitFor(pod, p)

	spec := &pod.Spec
	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		vp := fmt.Sprintf("spec.volumes[%d]", i)
		// The apiserver takes any hostPath; the runtime needs it absolute.
		if hp := vol.HostPath; hp != nil && hp.Path != "" && !path.IsAbs(hp.Path) {
			p.invalidf(vp+".hostPath.path", "must be an absolute path, got %q", hp.Path)
		}
		if ed := vol.EmptyDir; ed != nil && ed.SizeLimit != nil && !under(vp+".emptyDir.sizeLimit", rejected) {
			validateQuantity(vp+".emptyDir.sizeLimit", v1.ResourceStorage, *ed.SizeLimit, p)
		}
	}
	for i := range spec.InitContainers {
		validateContainer(fmt.Sprintf("spec.initContainers[%d]", i), &spec.InitContainers[i], p)
	}
	for i := range spec.Containers {
		validateContainer(fmt.Sprintf("spec.containers[%d]", i), &spec.Containers[i], p)
	}
	validatePodTotals(spec, p)
}

// validateCapabilities refuses capability names written with the kernel's
// CAP_ prefix. Kubernetes names them without it (SYS_ADMIN); containerd's
// CRI prefixes every name with CAP_, so under kubelet "CAP_SYS_ADMIN"
// becomes CAP_CAP_SYS_ADMIN and grants nothing, while podvisor, which
// accepts either form, would grant the capability: a manifest reviewed
// against kubelet must not gain privileges here.
func validateCapabilities(fp string, caps *v1.Capabilities, p *problems) {
	for _, list := range []struct {
		name string
		caps []v1.Capability
	}{{"add", caps.Add}, {"drop", caps.Drop}} {
		for i, c := range list.caps {
			name := string(c)
			if len(name) >= 4 && strings.EqualFold(name[:4], "CAP_") {
				p.invalidf(fmt.Sprintf("%s.%s[%d]", fp, list.name, i),
					"%q: capability names have no CAP_ prefix in Kubernetes (write %q); under kubelet this name matches no capability and %s nothing, so podvisor refuses it rather than %s the capability",
					name, strings.ToUpper(name[4:]), map[string]string{"add": "grants", "drop": "drops"}[list.name], map[string]string{"add": "grant", "drop": "drop"}[list.name])
			}
		}
	}
}

// truncateHostname is kubelet's truncatePodHostnameIfNeeded: the first 63
// characters, without trailing '-' or '.'.
func truncateHostname(name string) string {
	if len(name) <= maxHostnameLen {
		return name
	}
	return strings.TrimRight(name[:maxHostnameLen], "-.")
}

// validateContainer checks what the apiserver leaves to the node: paths
// that the runtime resolves must be absolute, two mount paths may not name
// the same directory, and quantities must fit podvisor's arithmetic.
func validateContainer(cp string, c *v1.Container, p *problems) {
	if c.TerminationMessagePath != "" && !path.IsAbs(c.TerminationMessagePath) {
		p.invalidf(cp+".terminationMessagePath", "must be an absolute path, got %q", c.TerminationMessagePath)
	}
	if c.WorkingDir != "" && !path.IsAbs(c.WorkingDir) {
		p.invalidf(cp+".workingDir", "must be an absolute path, got %q", c.WorkingDir)
	}
	if c.Stdin && !c.TTY {
		// containerd's shim gives a process no stdin pipe when its output
		// goes to a log binary, as podvisor's does; a terminal reads the
		// stdin fifo itself.
		p.invalid(cp+".stdin", "stdin without tty: true is not supported: podvisor's log driver leaves a container without a terminal no stdin; set tty: true as well")
	}

	if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
		validateCapabilities(cp+".securityContext.capabilities", sc.Capabilities, p)
	}

	// Negative quantities and requests over limits are Kubernetes' errors;
	// quantities too large for int64 cgroup values are podvisor's.
	for _, kind := range []struct {
		name string
		rl   v1.ResourceList
	}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
		for _, name := range slices.Sorted(maps.Keys(kind.rl)) { // errors in a stable order
			q := kind.rl[name]
			if lim, ok := c.Resources.Limits[name]; kind.name == "requests" && ok && q.Cmp(lim) == 0 && !quantityOK(name, lim) {
				continue // defaulted from the limit, whose error says it
			}
			validateQuantity(fmt.Sprintf("%s.resources.%s[%s]", cp, kind.name, name), name, q, p)
		}
	}

	// The apiserver takes any hostIP; a port mapping needs an address.
	for i, port := range c.Ports {
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				p.invalidf(fmt.Sprintf("%s.ports[%d].hostIP", cp, i), "must be a valid IP address, got %q", port.HostIP)
			}
		}
	}

	// Kubernetes requires mount paths to be unique as strings; "/x" and
	// "/x/" are one directory, and the second mount would hide the first.
	written, cleaned := map[string]bool{}, map[string]bool{}
	for i, m := range c.VolumeMounts {
		if m.MountPath == "" {
			continue
		}
		mp := fmt.Sprintf("%s.volumeMounts[%d].mountPath", cp, i)
		if !path.IsAbs(m.MountPath) {
			p.invalidf(mp, "must be an absolute path, got %q", m.MountPath)
			continue
		}
		clean := path.Clean(m.MountPath)
		if cleaned[clean] && !written[m.MountPath] {
			p.invalidf(mp, "must be unique, %q is mounted twice", clean)
		}
		written[m.MountPath], cleaned[clean] = true, true
	}
	validateVolumeDevices(cp, c, p)
}
