package manifest

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// problems collects the errors and warnings of one pod, with field paths
// relative to the pod; parse.go turns them into FileErrors with lines.
type problems struct {
	errs  []fieldErr
	warns []string
}

type fieldErr struct {
	field, reason string
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

// validatePod checks a defaulted pod whose identity is applied; baseName is
// metadata.name as the user wrote it.
//
// The checks mirror Kubernetes' pkg/apis/core/validation (validation.go) for
// the fields podvisor implements; each block names the test in
// pkg/apis/core/validation/validation_test.go whose cases it follows (cited by
// function name).
func validatePod(pod *v1.Pod, baseName string, p *problems) {
	before := len(p.errs)
	// TestValidateObjectMetaNamespaces and the name cases of TestValidatePod:
	// names are DNS-1123 subdomains, namespaces DNS-1123 labels.
	switch {
	case baseName == "":
		p.invalid("metadata.name", "required")
	default:
		for _, msg := range validation.IsDNS1123Subdomain(baseName) {
			p.invalid("metadata.name", msg)
		}
		// The full name is also the pod's hostname (kubelet truncates it to
		// 63 characters when spec.hostname is empty), the mirror pod's name,
		// and a part of container and sandbox names, so it must be valid too.
		if len(validation.IsDNS1123Subdomain(baseName)) == 0 {
			for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
				p.invalidf("metadata.name", "the static pod name %q (<name>-<node>) is invalid: %s", pod.Name, msg)
			}
		}
		if pod.Spec.Hostname == "" && len(pod.Name) > maxHostnameLen {
			p.warn(fmt.Sprintf("metadata.name: the pod hostname will be %q, the static pod name truncated to %d characters; set spec.hostname to choose it",
				truncateHostname(pod.Name), maxHostnameLen))
		}
	}
	for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
		p.invalid("metadata.namespace", msg)
	}
	if len(p.errs) == before { // a name that is already wrong says so once
		validateLogDir(pod, p)
	}
	validateMeta(&pod.ObjectMeta, p)

	spec := &pod.Spec
	vols := validateVolumes(spec.Volumes, p)

	// TestValidateContainers / TestValidateInitContainers.
	if len(spec.Containers) == 0 {
		p.invalid("spec.containers", "required: at least one container")
	}
	names := map[string]string{}
	for i := range spec.InitContainers {
		validateContainer(fmt.Sprintf("spec.initContainers[%d]", i), &spec.InitContainers[i], vols, names, p)
		// Init containers run one at a time, so each only conflicts with itself.
		validateHostPorts([]string{fmt.Sprintf("spec.initContainers[%d]", i)}, spec.InitContainers[i:i+1], p)
	}
	var paths []string
	for i := range spec.Containers {
		paths = append(paths, fmt.Sprintf("spec.containers[%d]", i))
		validateContainer(paths[i], &spec.Containers[i], vols, names, p)
	}
	validateHostPorts(paths, spec.Containers, p)
	validatePodTotals(spec, p)

	// TestValidateRestartPolicy.
	switch spec.RestartPolicy {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		p.invalidf("spec.restartPolicy", "unsupported value %q: must be Always, OnFailure or Never", spec.RestartPolicy)
	}

	// TestValidateDNSPolicy and TestValidatePodDNSConfig.
	switch spec.DNSPolicy {
	case v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault:
	case v1.DNSNone:
		if spec.DNSConfig == nil || len(spec.DNSConfig.Nameservers) == 0 {
			p.invalid("spec.dnsConfig.nameservers", "required: at least one nameserver when dnsPolicy is None")
		}
	default:
		p.invalidf("spec.dnsPolicy", "unsupported value %q: must be ClusterFirstWithHostNet, ClusterFirst, Default or None", spec.DNSPolicy)
	}
	if c := spec.DNSConfig; c != nil {
		if len(c.Nameservers) > 3 {
			p.invalidf("spec.dnsConfig.nameservers", "must not have more than 3 nameservers, got %d", len(c.Nameservers))
		}
		for i, ns := range c.Nameservers {
			if _, err := netip.ParseAddr(ns); err != nil {
				p.invalidf(fmt.Sprintf("spec.dnsConfig.nameservers[%d]", i), "must be a valid IP address, got %q", ns)
			}
		}
		if len(c.Searches) > 32 {
			p.invalidf("spec.dnsConfig.searches", "must not have more than 32 search paths, got %d", len(c.Searches))
		}
		for i, s := range c.Searches {
			for _, msg := range validation.IsDNS1123Subdomain(strings.TrimSuffix(s, ".")) {
				p.invalid(fmt.Sprintf("spec.dnsConfig.searches[%d]", i), msg)
			}
		}
		for i, o := range c.Options {
			if o.Name == "" {
				p.invalid(fmt.Sprintf("spec.dnsConfig.options[%d].name", i), "required")
			}
		}
	}

	// TestValidatePodSpec: hostname, hostAliases, grace period.
	if spec.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(spec.Hostname) {
			p.invalid("spec.hostname", msg)
		}
	}
	for i, ha := range spec.HostAliases {
		hp := fmt.Sprintf("spec.hostAliases[%d]", i)
		if _, err := netip.ParseAddr(ha.IP); err != nil {
			p.invalidf(hp+".ip", "must be a valid IP address, got %q", ha.IP)
		}
		for j, h := range ha.Hostnames {
			for _, msg := range validation.IsDNS1123Subdomain(h) {
				p.invalid(fmt.Sprintf("%s.hostnames[%d]", hp, j), msg)
			}
		}
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		p.invalid("spec.terminationGracePeriodSeconds", "must be greater than or equal to 0")
	}

	// TestValidatePodSecurityContext (the implemented fields).
	if sc := spec.SecurityContext; sc != nil {
		validateIDs("spec.securityContext", sc.RunAsUser, sc.RunAsGroup, p)
		for i, g := range sc.SupplementalGroups {
			for _, msg := range validation.IsValidGroupID(g) {
				p.invalid(fmt.Sprintf("spec.securityContext.supplementalGroups[%d]", i), msg)
			}
		}
	}
}

func validateIDs(path string, uid, gid *int64, p *problems) {
	if uid != nil {
		for _, msg := range validation.IsValidUserID(*uid) {
			p.invalid(path+".runAsUser", msg)
		}
	}
	if gid != nil {
		for _, msg := range validation.IsValidGroupID(*gid) {
			p.invalid(path+".runAsGroup", msg)
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

// validHostPathTypes is the set TestValidateVolumes' hostPath cases accept.
var validHostPathTypes = []v1.HostPathType{
	v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory,
	v1.HostPathFileOrCreate, v1.HostPathFile, v1.HostPathSocket,
	v1.HostPathCharDev, v1.HostPathBlockDev,
}

// validateVolumes follows TestValidateVolumes: names are unique DNS-1123
// labels, one source per volume, hostPath paths are absolute and their type
// known. It returns the volumes by name for the mount checks.
func validateVolumes(vols []v1.Volume, p *problems) map[string]*v1.Volume {
	byName := map[string]*v1.Volume{}
	for i := range vols {
		vol := &vols[i]
		vp := fmt.Sprintf("spec.volumes[%d]", i)
		switch msgs := validation.IsDNS1123Label(vol.Name); {
		case vol.Name == "":
			p.invalid(vp+".name", "required")
		case len(msgs) > 0:
			for _, msg := range msgs {
				p.invalid(vp+".name", msg)
			}
		case byName[vol.Name] != nil:
			p.invalidf(vp+".name", "duplicate volume name %q", vol.Name)
		default:
			byName[vol.Name] = vol
		}
		if n := countSources(vol); n > 1 {
			p.invalid(vp, "may not specify more than 1 volume source")
		}
		if hp := vol.HostPath; hp != nil {
			switch {
			case hp.Path == "":
				p.invalid(vp+".hostPath.path", "required")
			case !path.IsAbs(hp.Path):
				p.invalidf(vp+".hostPath.path", "must be an absolute path, got %q", hp.Path)
			case slices.Contains(strings.Split(hp.Path, "/"), ".."):
				p.invalidf(vp+".hostPath.path", "must not contain '..', got %q", hp.Path)
			}
			if hp.Type != nil && !slices.Contains(validHostPathTypes, *hp.Type) {
				p.invalidf(vp+".hostPath.type", "unsupported value %q: must be one of \"\", DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice", *hp.Type)
			}
		}
		if ed := vol.EmptyDir; ed != nil && ed.SizeLimit != nil {
			validateQuantity(vp+".emptyDir.sizeLimit", v1.ResourceStorage, *ed.SizeLimit, p)
		}
	}
	return byName
}

func countSources(vol *v1.Volume) int {
	n := 0
	if vol.HostPath != nil {
		n++
	}
	if vol.EmptyDir != nil {
		n++
	}
	// Other sources are rejected by the field table; counting them here
	// would only repeat that error.
	return n
}

// validateContainer follows TestValidateContainers, TestValidatePorts,
// TestValidateVolumeMounts, TestValidateEnv and
// TestValidateResourceRequirements. names collects container names across
// init and app containers (they must be unique across both).
func validateContainer(cp string, c *v1.Container, vols map[string]*v1.Volume, names map[string]string, p *problems) {
	switch msgs := validation.IsDNS1123Label(c.Name); {
	case c.Name == "":
		p.invalid(cp+".name", "required")
	case len(msgs) > 0:
		for _, msg := range msgs {
			p.invalid(cp+".name", msg)
		}
	case names[c.Name] != "":
		p.invalidf(cp+".name", "duplicate container name %q (also %s)", c.Name, names[c.Name])
	default:
		names[c.Name] = cp
	}

	switch {
	case strings.TrimSpace(c.Image) == "":
		p.invalid(cp+".image", "required")
	case strings.TrimSpace(c.Image) != c.Image:
		p.invalid(cp+".image", "must not have leading or trailing whitespace")
	}

	switch c.ImagePullPolicy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		p.invalidf(cp+".imagePullPolicy", "unsupported value %q: must be Always, IfNotPresent or Never", c.ImagePullPolicy)
	}
	switch c.TerminationMessagePolicy {
	case v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError:
	default:
		p.invalidf(cp+".terminationMessagePolicy", "unsupported value %q: must be File or FallbackToLogsOnError", c.TerminationMessagePolicy)
	}
	if c.TerminationMessagePath != "" && !path.IsAbs(c.TerminationMessagePath) {
		p.invalidf(cp+".terminationMessagePath", "must be an absolute path, got %q", c.TerminationMessagePath)
	}
	if c.WorkingDir != "" && !path.IsAbs(c.WorkingDir) {
		p.invalidf(cp+".workingDir", "must be an absolute path, got %q", c.WorkingDir)
	}

	// TestValidateEnv (names only; valueFrom is rejected by the field table).
	for i, e := range c.Env {
		ep := fmt.Sprintf("%s.env[%d].name", cp, i)
		if e.Name == "" {
			p.invalid(ep, "required")
			continue
		}
		for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
			p.invalid(ep, msg)
		}
	}

	// TestValidatePorts.
	portNames := map[string]bool{}
	for i, port := range c.Ports {
		pp := fmt.Sprintf("%s.ports[%d]", cp, i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				p.invalid(pp+".name", msg)
			}
			if portNames[port.Name] {
				p.invalidf(pp+".name", "duplicate port name %q", port.Name)
			}
			portNames[port.Name] = true
		}
		for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
			p.invalid(pp+".containerPort", msg)
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				p.invalid(pp+".hostPort", msg)
			}
		}
		switch port.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			p.invalidf(pp+".protocol", "unsupported value %q: must be TCP, UDP or SCTP", port.Protocol)
		}
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				p.invalidf(pp+".hostIP", "must be a valid IP address, got %q", port.HostIP)
			}
		}
	}

	// TestValidateResourceRequirements: quantities are not negative (nor
	// too large to account for) and a request never exceeds its limit.
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
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[name]
		lim, hasLim := c.Resources.Limits[name]
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			p.invalidf(fmt.Sprintf("%s.resources.requests[%s]", cp, name), "must be less than or equal to %s limit of %s, got %s", name, lim.String(), req.String())
		}
	}

	// TestValidateVolumeMounts.
	mountPaths := map[string]bool{}
	for i, m := range c.VolumeMounts {
		mp := fmt.Sprintf("%s.volumeMounts[%d]", cp, i)
		switch {
		case m.Name == "":
			p.invalid(mp+".name", "required")
		case vols[m.Name] == nil:
			p.invalidf(mp+".name", "volume %q not found in spec.volumes", m.Name)
		}
		switch clean := path.Clean(m.MountPath); {
		case m.MountPath == "":
			p.invalid(mp+".mountPath", "required")
		case !path.IsAbs(m.MountPath):
			p.invalidf(mp+".mountPath", "must be an absolute path, got %q", m.MountPath)
		case mountPaths[clean]:
			p.invalidf(mp+".mountPath", "must be unique, %q is mounted twice", m.MountPath)
		default:
			mountPaths[clean] = true
		}
		if m.SubPath != "" {
			switch {
			case path.IsAbs(m.SubPath):
				p.invalidf(mp+".subPath", "must be a relative path, got %q", m.SubPath)
			case slices.Contains(strings.Split(m.SubPath, "/"), ".."):
				p.invalidf(mp+".subPath", "must not contain '..', got %q", m.SubPath)
			}
		}
	}

	if sc := c.SecurityContext; sc != nil {
		validateIDs(cp+".securityContext", sc.RunAsUser, sc.RunAsGroup, p)
		if sc.Privileged != nil && *sc.Privileged && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			p.invalid(cp+".securityContext.allowPrivilegeEscalation", "cannot be false when privileged is true")
		}
	}
}

// validateHostPorts follows the hostPort cases of TestValidatePodSpec
// (AccumulateUniqueHostPorts): a host port is used once per protocol and
// host IP among the containers given.
func validateHostPorts(paths []string, ctrs []v1.Container, p *problems) {
	seen := map[string]string{}
	for i := range ctrs {
		for j, port := range ctrs[i].Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			pp := fmt.Sprintf("%s.ports[%d].hostPort", paths[i], j)
			if other, dup := seen[key]; dup {
				p.invalidf(pp, "duplicate host port %d/%s (also %s)", port.HostPort, port.Protocol, other)
				continue
			}
			seen[key] = pp
		}
	}
}
