package podfile

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podvisor/podvisor/internal/version"
)

// Support says how podvisor treats one API field.
type Support int

// The three answers podvisor gives for every field (DESIGN invariant 6: no
// field is silently ignored).
const (
	// Implemented fields have their Kubernetes meaning, possibly restricted to
	// some values (see FieldSupport.Note); other values are rejected.
	Implemented Support = iota + 1
	// IgnoredWithWarning fields are accepted but have no effect; setting one to
	// a non-default value adds an entry to Pod.Warnings.
	IgnoredWithWarning
	// Rejected fields make the manifest invalid when set to a non-default value.
	Rejected
)

// String returns the support level as the README spells it.
func (s Support) String() string {
	switch s {
	case Implemented:
		return "implemented"
	case IgnoredWithWarning:
		return "ignored (warning)"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("Support(%d)", int(s))
}

// FieldSupport is one row of the field table.
type FieldSupport struct {
	// Struct is the Go type name in k8s.io/api/core/v1: "PodSpec",
	// "Container", "PodSecurityContext" or "SecurityContext".
	Struct string
	// Field is the JSON name of the field.
	Field string
	// Support is what podvisor does with the field.
	Support Support
	// Note says why, or which values are implemented.
	Note string
}

// The structs covered by the table, in the order the table lists them.
var tableStructs = []reflect.Type{
	reflect.TypeFor[v1.PodSpec](),
	reflect.TypeFor[v1.Container](),
	reflect.TypeFor[v1.PodSecurityContext](),
	reflect.TypeFor[v1.SecurityContext](),
}

const (
	impl   = Implemented
	ignore = IgnoredWithWarning
	reject = Rejected
)

// fieldTable lists every field of the four structs of k8s.io/api v0.37.2;
// fields_test.go fails when it and the structs disagree.
var fieldTable = []FieldSupport{
	// PodSpec
	{"PodSpec", "volumes", impl, "hostPath, emptyDir, configMap, secret, downwardAPI and projected (configMap, secret and downwardAPI sources) from the local ConfigMaps and Secrets, with items, mode, defaultMode and optional, updated in place when an object changes; secret and projected volumes on tmpfs; projected serviceAccountToken, clusterTrustBundle and podCertificate rejected (they need a control plane); emptyDir sizeLimit (with medium Memory it sizes the tmpfs; on disk a pod over it is evicted, as kubelet); persistentVolumeClaim from local PersistentVolumeClaim documents, bound to a local or hostPath PersistentVolume document or to a directory podvisor provisions under its volumes dir (kept when the pod goes; removed with its claim only with podvisor.io/reclaim-policy: Delete; the storage request enforced by a project quota (ext4, xfs) or btrfs qgroup where the filesystem has them), readOnly, ReadWriteOncePod; the pod waits for a missing or unbound claim; image (an OCI image's layers mounted read-only, pulled with the pod's imagePullSecrets and the node's credentials as pullPolicy says, subPath a directory of the image; a failed pull holds the containers that mount it in ErrImagePull/ImagePullBackOff; never collected while mounted; an OCI artifact shown as CRI-O shows one, each layer a read-only file at its title, a title leading out of the volume ErrImagePull); other sources rejected"},
	{"PodSpec", "initContainers", impl, "run in order before the app containers"},
	{"PodSpec", "containers", impl, ""},
	{"PodSpec", "ephemeralContainers", reject, "there is no API to add them"},
	{"PodSpec", "restartPolicy", impl, ""},
	{"PodSpec", "terminationGracePeriodSeconds", impl, ""},
	{"PodSpec", "activeDeadlineSeconds", impl, "counted from status.startTime, kept across podvisor restarts; once reached the pod is stopped (preStop hooks within its grace period) and ends Failed with reason DeadlineExceeded and a DeadlineExceeded event, as kubelet's; it does not start again until its manifest changes"},
	{"PodSpec", "dnsPolicy", impl, ""},
	{"PodSpec", "nodeSelector", ignore, "there is only this node"},
	{"PodSpec", "serviceAccountName", impl, "accepted with a warning that no token is mounted: a static pod gets none, as under kubelet; fieldRef spec.serviceAccountName reads it; the mirror pod leaves it out (NodeRestriction refuses it) and lists it in podvisor.io/local-references"},
	{"PodSpec", "serviceAccount", impl, "deprecated alias of serviceAccountName, taken as it when serviceAccountName is empty"},
	{"PodSpec", "automountServiceAccountToken", ignore, "no token is ever mounted: a static pod gets none, as under kubelet; true is warned about (with serviceAccountName, in its one warning), false is quiet; the mirror pod of a pod naming a service account leaves it out"},
	{"PodSpec", "nodeName", ignore, "set to this node"},
	{"PodSpec", "hostNetwork", impl, ""},
	{"PodSpec", "hostPID", impl, ""},
	{"PodSpec", "hostIPC", impl, ""},
	{"PodSpec", "shareProcessNamespace", impl, "the pod's containers share one PID namespace whose PID 1 is the pod's init (podvisor's small `pod-init`, in place of the pause container: no image, about 0.5 MiB of memory of its own, in the pod's cgroup, not listed among the pod's containers); if the init ends, the pod gets a new sandbox and its containers restart, as under kubelet; not with hostPID (Kubernetes' validation)"},
	{"PodSpec", "securityContext", impl, "see the PodSecurityContext rows"},
	{"PodSpec", "imagePullSecrets", impl, "local Secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg, tried before --image-credentials-file"},
	{"PodSpec", "hostname", impl, ""},
	{"PodSpec", "subdomain", impl, "with --cluster-domain, /etc/hosts names the pod's IPs by its FQDN (hostname.subdomain.namespace.svc.cluster-domain) and its hostname, as kubelet's; without a cluster domain it has no effect (no cluster DNS serves the name)"},
	{"PodSpec", "affinity", ignore, "scheduling only"},
	{"PodSpec", "schedulerName", ignore, "scheduling only"},
	{"PodSpec", "tolerations", ignore, "scheduling only"},
	{"PodSpec", "hostAliases", impl, ""},
	{"PodSpec", "priorityClassName", impl, "system-node-critical makes the pod critical for its OOM score, as kubelet"},
	{"PodSpec", "priority", impl, "no effect alone: kubelet takes a static pod's criticality from priorityClassName"},
	{"PodSpec", "dnsConfig", impl, ""},
	{"PodSpec", "readinessGates", reject, "conditions are set by controllers that static pods do not have"},
	{"PodSpec", "runtimeClassName", impl, "a class of the configuration file's runtimeClasses (its containerd runtimeType and options, e.g. BinaryName crun); a class the node lacks waits in ContainerCreating (FailedCreatePodSandBox), as under kubelet"},
	{"PodSpec", "enableServiceLinks", ignore, "there are no services"},
	{"PodSpec", "preemptionPolicy", ignore, "scheduling only"},
	{"PodSpec", "overhead", ignore, "set by RuntimeClass admission, scheduling only"},
	{"PodSpec", "topologySpreadConstraints", ignore, "scheduling only"},
	{"PodSpec", "setHostnameAsFQDN", impl, "with a subdomain and --cluster-domain, the hostname (uname, /etc/hostname) is the FQDN (hostname.subdomain.namespace.svc.cluster-domain), as kubelet's; an FQDN over 64 characters fails the sandbox (FailedCreatePodSandBox) with kubelet's message; else the short hostname"},
	{"PodSpec", "os", impl, "os.name linux only"},
	{"PodSpec", "hostUsers", impl, "false: the pod's own user namespace, owning its network and IPC namespaces, mapping IDs 0-65535 to 65536 host IDs of its own (from the /etc/subuid and /etc/subgid entries of a user named podvisor, else every ID from 65536 up, as kubelet), kept for the pod's life; the image's layers idmapped by containerd's snapshotter (containerd 2.0 or later: on 1.6 the sandbox is refused with kubelet's reason), volumes mounted idmapped (needs runc 1.2 or later: with an older runc a pod that mounts a volume is refused; a volume whose filesystem the kernel cannot idmap, tmpfs before Linux 6.3, keeps its container in CreateContainerConfigError)"},
	{"PodSpec", "schedulingGates", ignore, "scheduling only"},
	{"PodSpec", "resourceClaims", reject, "dynamic resource allocation needs a control plane"},
	{"PodSpec", "resources", impl, "cpu and memory requests and limits, as kubelet's pod-level resources: the pod cgroup's cpu.shares, CFS quota and memory limit, a container without its own cpu or memory limit bounded by the pod's, the QoS class, OOM scores and eviction ranking from them, resourceFieldRef falling back to the pod's limits; hugepages rejected"},
	{"PodSpec", "hostnameOverride", impl, "the pod's hostname (uname, /etc/hostname, /etc/hosts) in place of hostname and subdomain, as kubelet's: no FQDN in /etc/hosts; refused with setHostnameAsFQDN or hostNetwork, over 64 characters or not a DNS subdomain, as Kubernetes' validation"},
	{"PodSpec", "schedulingGroup", ignore, "scheduling only"},
	{"PodSpec", "evictionResponders", reject, "the eviction API needs a control plane"},

	// Container (also used for initContainers)
	{"Container", "name", impl, ""},
	{"Container", "image", impl, ""},
	{"Container", "command", impl, ""},
	{"Container", "args", impl, ""},
	{"Container", "workingDir", impl, ""},
	{"Container", "ports", impl, ""},
	{"Container", "envFrom", impl, "configMapRef and secretRef of local ConfigMaps and Secrets, with prefix and optional; keys that are not valid names are skipped with an event"},
	{"Container", "env", impl, "value, and valueFrom: fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef of local objects, and fileKeyRef (a KEY='value' file in an emptyDir volume, which an init container writes, read when the container starts, in kubelet's format; a missing or malformed file waits even when optional, an empty value counts as missing, as kubelet's); a missing object, key or file waits in CreateContainerConfigError"},
	{"Container", "resources", impl, "cpu and memory; ephemeral-storage requests rank pods for eviction under disk pressure and a container over its limit gets its pod evicted, as kubelet; an extended resource (nvidia.com/gpu: 1) is that many devices of the CDI kind it names, from --cdi-spec-dirs, each held by one pod (kubelet's OutOf<resource> rejection when too few are free); hugepages and claims rejected"},
	{"Container", "resizePolicy", ignore, "resources change only by editing the manifest"},
	{"Container", "restartPolicy", impl, "Always only on initContainers (sidecar containers); Always, OnFailure and Never on app containers, in place of the pod's restartPolicy for that container, as kubelet's ContainerRestartRules"},
	{"Container", "restartPolicyRules", impl, "the first rule whose exitCodes match (In or NotIn) decides, else the container's restartPolicy, as kubelet's: action Restart restarts the container (on a sidecar, which restarts anyway, no effect); action RestartAllContainers (on a sidecar or an app container) restarts the whole pod in place, as kubelet's: every running container is stopped at once (no preStop hook, 2 s grace), then the pod starts again from its first init container in the same sandbox (IP, volumes kept), each container's restartCount one more, last state RestartingAllContainers; condition AllContainersRestarting True meanwhile"},
	{"Container", "volumeMounts", impl, "mountPropagation None, HostToContainer (rslave; the source must be on a shared or slave mount) and Bidirectional (rshared, privileged containers only; the source must be on a shared mount, else the container waits in CreateContainerError; podvisor changes no host mount's propagation), as containerd's CRI; recursiveReadOnly Disabled; subPathExpr expanded from the container's env and envFrom as kubelet's (an unset or empty variable, an absolute path or '..' wait in CreateContainerConfigError); bindMountOptions rejected; configMap, secret, downwardAPI and projected volumes are always read-only, and a subPath of one is a copy taken at start that is never updated, as kubelet's"},
	{"Container", "volumeDevices", impl, "persistentVolumeClaim volumes of volumeMode Block, bound to a PersistentVolume document of volumeMode Block whose local.path (or hostPath.path, type BlockDevice or none) is a block device (podvisor provisions none: such a claim with no volume stays unbound and its pods wait): the device node at devicePath, its cgroup access rwm (r with readOnly), as containerd's CRI; a path that is not a block device when the container is created waits in CreateContainerError; a Block claim in volumeMounts or a Filesystem one in volumeDevices keeps the pod waiting (FailedMount) with kubelet's message"},
	{"Container", "livenessProbe", impl, probeNote},
	{"Container", "readinessProbe", impl, probeNote},
	{"Container", "startupProbe", impl, probeNote},
	{"Container", "lifecycle", impl, "postStart and preStop with exec, httpGet or sleep (tcpSocket is rejected: Kubernetes does not run it); stopSignal (Linux signal names, needs spec.os.name linux)"},
	{"Container", "terminationMessagePath", impl, ""},
	{"Container", "terminationMessagePolicy", impl, ""},
	{"Container", "imagePullPolicy", impl, ""},
	{"Container", "securityContext", impl, "see the SecurityContext rows"},
	{"Container", "stdin", impl, "with tty: true only; `podvisor attach -i` writes to it"},
	{"Container", "stdinOnce", impl, "stdin closes when the first attach that sent stdin ends"},
	{"Container", "tty", impl, "a terminal (TERM=xterm unless set); its output is logged a line at a time"},

	// PodSecurityContext
	{"PodSecurityContext", "seLinuxOptions", impl, selinuxNote},
	{"PodSecurityContext", "windowsOptions", ignore, windowsOptionsNote},
	{"PodSecurityContext", "runAsUser", impl, ""},
	{"PodSecurityContext", "runAsGroup", impl, ""},
	{"PodSecurityContext", "runAsNonRoot", impl, ""},
	{"PodSecurityContext", "supplementalGroups", impl, ""},
	{"PodSecurityContext", "supplementalGroupsPolicy", impl, "Merge (the default: the groups the image's /etc/group gives the user are added) and Strict (only the primary group, fsGroup and supplementalGroups), on containerd 1.6 and 2.x alike: podvisor sets the process's groups itself; containerStatuses[].user.linux reports uid, gid and supplementalGroups, and the node says it supports the policy (status.features), as kubelet"},
	{"PodSecurityContext", "fsGroup", impl, "added to every container's supplementary groups; emptyDir, configMap, secret, downwardAPI and projected volumes are given to the group (setgid directories, group read-write, read-only for the last four), hostPath volumes never"},
	{"PodSecurityContext", "sysctls", impl, "kubelet's safe sysctls (kernel.shm_rmid_forced, net.ipv4.ip_local_port_range, ... as the kernel namespaces them), and namespaced ones --allowed-unsafe-sysctls allows; set in the pod's network and IPC namespaces; a sysctl not allowed, or in a namespace the pod shares with the host, fails the pod with SysctlForbidden as kubelet's admission does"},
	{"PodSecurityContext", "fsGroupChangePolicy", impl, "Always and OnRootMismatch accepted; neither changes anything, as under kubelet: an emptyDir gets the group on its root alone, once, when created; configMap, secret, downwardAPI and projected volumes are walked at every write whatever the policy, as kubelet's"},
	{"PodSecurityContext", "seccompProfile", impl, "RuntimeDefault, Unconfined, and Localhost: the JSON profile at localhostProfile under --seccomp-profile-root (a missing or unreadable file makes the container wait in CreateContainerError); inherited by containers that set none; none for privileged containers, as containerd's CRI"},
	{"PodSecurityContext", "appArmorProfile", impl, "RuntimeDefault (none on hosts without AppArmor), Localhost (loaded profiles), Unconfined; inherited by containers that set none"},
	{"PodSecurityContext", "seLinuxChangePolicy", impl, "Recursive and MountOption accepted; neither changes anything: podvisor relabels no volume, and without SELinux on the host kubelet does not either"},

	// SecurityContext (container)
	{"SecurityContext", "capabilities", impl, "names as Kubernetes writes them (SYS_ADMIN, ALL); a CAP_ prefix is refused: it grants nothing under kubelet's CRI and would grant the capability here"},
	{"SecurityContext", "privileged", impl, ""},
	{"SecurityContext", "seLinuxOptions", impl, selinuxNote},
	{"SecurityContext", "windowsOptions", ignore, windowsOptionsNote},
	{"SecurityContext", "runAsUser", impl, ""},
	{"SecurityContext", "runAsGroup", impl, ""},
	{"SecurityContext", "runAsNonRoot", impl, ""},
	{"SecurityContext", "readOnlyRootFilesystem", impl, ""},
	{"SecurityContext", "allowPrivilegeEscalation", impl, ""},
	{"SecurityContext", "procMount", impl, "Default only"},
	{"SecurityContext", "seccompProfile", impl, "RuntimeDefault, Unconfined, and Localhost (a JSON profile under --seccomp-profile-root)"},
	{"SecurityContext", "appArmorProfile", impl, "RuntimeDefault (none on hosts without AppArmor), Localhost (loaded profiles), Unconfined"},
}

// probeNote is the field table's note for the three probes.
const probeNote = "exec; httpGet (scheme HTTP or HTTPS, host, path, httpHeaders, port by number or container port name; HTTP/1.1 only); tcpSocket; grpc (plaintext, optional service); all timing and threshold fields; terminationGracePeriodSeconds"

var fieldIndex = func() map[string]FieldSupport {
	m := make(map[string]FieldSupport, len(fieldTable))
	for _, f := range fieldTable {
		m[f.Struct+"."+f.Field] = f
	}
	return m
}()

// FieldTable returns the support table for every field of v1.PodSpec,
// v1.Container, v1.PodSecurityContext and v1.SecurityContext.
func FieldTable() []FieldSupport {
	return slices.Clone(fieldTable)
}

// WriteFieldTableMarkdown writes the field table as Markdown tables, one per
// struct, for the README.
func WriteFieldTableMarkdown(w io.Writer) error {
	var b strings.Builder
	last := ""
	for _, f := range fieldTable {
		if f.Struct != last {
			if last != "" {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "### %s\n\n| field | support | note |\n| --- | --- | --- |\n", f.Struct)
			last = f.Struct
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Field, f.Support, strings.ReplaceAll(f.Note, "|", `\|`))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// notSupported is the reason given for a rejected field.
func notSupported(note string) string {
	r := "not supported by podvisor " + version.Version
	if note != "" {
		r += " (" + note + ")"
	}
	return r
}

// ignoredWarning is the Pod.Warnings entry for an ignored field.
func ignoredWarning(field, why string) string {
	return field + ": ignored by podvisor (" + why + ")"
}

// isUnset reports whether a field value counts as not set: the zero value
// or an empty slice or map. A pointer that is not nil is set, whatever it
// points to: `fsGroup: 0` or `shareProcessNamespace: false` asks for
// something too, and a rejected field is rejected at any value.
func isUnset(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Pointer:
		return v.IsNil()
	}
	return v.IsZero()
}

// isDefaultValue reports field values that equal what podvisor does anyway,
// so that ignoring them needs no warning.
func isDefaultValue(structName, field string, v reflect.Value, nodeName string) bool {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch structName + "." + field {
	case "PodSpec.schedulerName":
		return v.String() == v1.DefaultSchedulerName
	case "PodSpec.enableServiceLinks":
		return v.Bool()
	case "PodSpec.nodeName":
		return v.String() == nodeName
	case "PodSpec.preemptionPolicy":
		return v.String() == string(v1.PreemptLowerPriority)
	}
	return false
}

// supportChecker applies the field table to a decoded pod, before defaulting.
type supportChecker struct {
	nodeName string
	p        *problems
}

// checkStruct applies the generic rules of the table to every field of the
// struct value v (one of the four table structs): Rejected fields that are
// set are errors, IgnoredWithWarning fields that are set to a non-default
// value are warnings. Implemented fields get their own checks in the callers.
func (c *supportChecker) checkStruct(path string, v reflect.Value) {
	t := v.Type()
	name := t.Name()
	for i := range t.NumField() {
		sf := t.Field(i)
		jn, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if jn == "" || jn == "-" {
			continue
		}
		fv := v.Field(i)
		if isUnset(fv) {
			continue
		}
		if name == "PodSpec" && serviceAccountFields[jn] {
			continue // checkServiceAccount: one warning for the three
		}
		fp := joinField(path, jn)
		row, ok := fieldIndex[name+"."+jn]
		if !ok {
			c.p.invalid(fp, notSupported("field unknown to podvisor"))
			continue
		}
		switch row.Support {
		case Rejected:
			c.p.invalid(fp, notSupported(row.Note))
		case IgnoredWithWarning:
			if !isDefaultValue(name, jn, fv, c.nodeName) {
				c.p.warn(ignoredWarning(fp, row.Note))
			}
		}
	}
	if name == "PodSpec" && v.CanAddr() {
		c.checkServiceAccount(path, v.Addr().Interface().(*v1.PodSpec))
	}
}

// supportedVolumeSources are the VolumeSource members podvisor implements.
var supportedVolumeSources = map[string]bool{
	"hostPath": true, "emptyDir": true,
	"configMap": true, "secret": true, "downwardAPI": true, "projected": true,
	"persistentVolumeClaim": true,
	"image":                 true,
}

func (c *supportChecker) checkPod(pod *v1.Pod) {
	spec := &pod.Spec
	c.checkStruct("spec", reflect.ValueOf(spec).Elem())
	c.checkCDIAnnotations(pod)

	for i := range spec.Volumes {
		c.checkVolume(fmt.Sprintf("spec.volumes[%d]", i), &spec.Volumes[i])
	}
	if spec.OS != nil && spec.OS.Name != v1.Linux {
		c.p.invalid("spec.os.name", notSupported(fmt.Sprintf("%q; linux only", spec.OS.Name)))
	}
	c.checkPodResources(spec)
	if sc := spec.SecurityContext; sc != nil {
		c.checkStruct("spec.securityContext", reflect.ValueOf(sc).Elem())
		c.checkSeccomp("spec.securityContext.seccompProfile", sc.SeccompProfile)
	}
	for i := range spec.InitContainers {
		ip := fmt.Sprintf("spec.initContainers[%d]", i)
		c.checkContainer(ip, &spec.InitContainers[i])
		// Kubernetes takes OnFailure and Never too (container restart
		// rules); podvisor runs sidecars only.
		if rp := spec.InitContainers[i].RestartPolicy; rp != nil && *rp != v1.ContainerRestartPolicyAlways {
			c.p.invalid(ip+".restartPolicy", notSupported(fmt.Sprintf("%q; Always (a sidecar container) only", *rp)))
		}
	}
	for i := range spec.Containers {
		cp := fmt.Sprintf("spec.containers[%d]", i)
		c.checkContainer(cp, &spec.Containers[i])
	}
}

// checkSeccomp applies podvisor's restriction of seccomp profiles, at the
// pod or the container level: every type Kubernetes has (its validation
// refuses others, and checks localhostProfile).
func (c *supportChecker) checkSeccomp(path string, p *v1.SeccompProfile) {
	if p == nil {
		return
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined, v1.SeccompProfileTypeLocalhost:
	default:
		c.p.invalid(path+".type", notSupported(fmt.Sprintf("%q; RuntimeDefault, Unconfined and Localhost only", p.Type)))
	}
}

// checkProbe rejects what podvisor's probers do not do; Kubernetes'
// validation checks the rest (one handler, thresholds, port formats).
func (c *supportChecker) checkProbe(path string, pr *v1.Probe, ctr *v1.Container) {
	if pr == nil {
		return
	}
	c.checkHTTPGet(path+".httpGet", pr.HTTPGet, ctr)
	if t := pr.TCPSocket; t != nil {
		c.checkPortName(path+".tcpSocket.port", t.Port, ctr)
	}
	if g := pr.GRPC; g != nil && g.Mode != nil && *g.Mode != v1.GRPCProbeModePlaintext {
		c.p.invalid(path+".grpc.mode", notSupported(fmt.Sprintf("%q; Plaintext only", *g.Mode)))
	}
}

// checkLifecycle rejects the handlers podvisor does not run.
func (c *supportChecker) checkLifecycle(path string, lc *v1.Lifecycle, ctr *v1.Container) {
	if lc == nil {
		return
	}
	for _, h := range []struct {
		name string
		h    *v1.LifecycleHandler
	}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
		if h.h == nil {
			continue
		}
		hp := path + "." + h.name
		// Kubernetes accepts tcpSocket here for compatibility and kubelet
		// does nothing with it: a hook that silently never runs.
		if h.h.TCPSocket != nil {
			c.p.invalid(hp+".tcpSocket", notSupported("Kubernetes does not support tcpSocket lifecycle handlers and kubelet never runs them; use exec, httpGet or sleep"))
		}
		c.checkHTTPGet(hp+".httpGet", h.h.HTTPGet, ctr)
	}
}

func (c *supportChecker) checkHTTPGet(path string, h *v1.HTTPGetAction, ctr *v1.Container) {
	if h == nil {
		return
	}
	if h.Protocol != nil && *h.Protocol != v1.HTTPProtocolHTTP1 {
		c.p.invalid(path+".protocol", notSupported(fmt.Sprintf("%q; HTTP1 only", *h.Protocol)))
	}
	c.checkPortName(path+".port", h.Port, ctr)
}

// checkPortName requires a port given by name to name one of the
// container's ports, which is where kubelet looks it up when the probe or
// hook runs; Kubernetes' validation only checks the name's form.
func (c *supportChecker) checkPortName(path string, port intstr.IntOrString, ctr *v1.Container) {
	if port.Type != intstr.String || port.StrVal == "" {
		return
	}
	for _, p := range ctr.Ports {
		if p.Name == port.StrVal {
			return
		}
	}
	c.p.invalidf(path, "port %q is not the name of one of this container's ports", port.StrVal)
}

func (c *supportChecker) checkVolume(path string, vol *v1.Volume) {
	vs := reflect.ValueOf(&vol.VolumeSource).Elem()
	for i := range vs.NumField() {
		jn, _, _ := strings.Cut(vs.Type().Field(i).Tag.Get("json"), ",")
		if vs.Field(i).IsNil() || supportedVolumeSources[jn] {
			continue
		}
		c.p.invalid(path+"."+jn, notSupported("hostPath, emptyDir, configMap, secret, downwardAPI, projected, persistentVolumeClaim and image volumes only"))
	}
	if pr := vol.Projected; pr != nil {
		for i, s := range pr.Sources {
			sp := fmt.Sprintf("%s.projected.sources[%d]", path, i)
			if s.ServiceAccountToken != nil {
				c.p.invalid(sp+".serviceAccountToken", notSupported("static pods cannot use service account tokens: no apiserver issues them"))
			}
			if s.ClusterTrustBundle != nil {
				c.p.invalid(sp+".clusterTrustBundle", notSupported("ClusterTrustBundles are API objects that only a control plane serves"))
			}
			if s.PodCertificate != nil {
				c.p.invalid(sp+".podCertificate", notSupported("pod certificates are signed through a control plane"))
			}
		}
	}
	if ed := vol.EmptyDir; ed != nil {
		if ed.Medium != v1.StorageMediumDefault && ed.Medium != v1.StorageMediumMemory {
			c.p.invalid(path+".emptyDir.medium", notSupported(fmt.Sprintf("medium %q; \"\" and Memory only", ed.Medium)))
		}
		if ed.Mode != nil {
			c.p.invalid(path+".emptyDir.mode", notSupported(""))
		}
		// A disk emptyDir's sizeLimit is enforced as kubelet does, by
		// evicting the pod (package pressure).
	}
}

func (c *supportChecker) checkContainer(path string, ctr *v1.Container) {
	c.checkStruct(path, reflect.ValueOf(ctr).Elem())

	c.checkResourceList(path+".resources.limits", ctr.Resources.Limits)
	c.checkResourceList(path+".resources.requests", ctr.Resources.Requests)
	if len(ctr.Resources.Claims) > 0 {
		c.p.invalid(path+".resources.claims", notSupported("dynamic resource allocation needs a control plane"))
	}
	for i, m := range ctr.VolumeMounts {
		mp := fmt.Sprintf("%s.volumeMounts[%d]", path, i)
		if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly != v1.RecursiveReadOnlyDisabled {
			c.p.invalid(mp+".recursiveReadOnly", notSupported(fmt.Sprintf("%q; Disabled only", *m.RecursiveReadOnly)))
		}
		if len(m.BindMountOptions) > 0 {
			c.p.invalid(mp+".bindMountOptions", notSupported(""))
		}
	}
	if sc := ctr.SecurityContext; sc != nil {
		sp := path + ".securityContext"
		c.checkStruct(sp, reflect.ValueOf(sc).Elem())
		if sc.ProcMount != nil && *sc.ProcMount != "" && *sc.ProcMount != v1.DefaultProcMount {
			c.p.invalid(sp+".procMount", notSupported(fmt.Sprintf("%q; Default only", *sc.ProcMount)))
		}
		c.checkSeccomp(sp+".seccompProfile", sc.SeccompProfile)
	}
	c.checkProbe(path+".livenessProbe", ctr.LivenessProbe, ctr)
	c.checkProbe(path+".readinessProbe", ctr.ReadinessProbe, ctr)
	c.checkProbe(path+".startupProbe", ctr.StartupProbe, ctr)
	c.checkLifecycle(path+".lifecycle", ctr.Lifecycle, ctr)
}

func (c *supportChecker) checkResourceList(path string, rl v1.ResourceList) {
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		rp := path + "[" + string(name) + "]"
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory:
		case v1.ResourceEphemeralStorage:
			// Enforced by eviction, as kubelet (package pressure).
		default:
			if IsDeviceResource(name) {
				continue // CDI devices (supervise/devices.go)
			}
			c.p.invalid(rp, notSupported("cpu, memory, ephemeral-storage and extended resources only"))
		}
	}
}
