package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/containerd/containerd/v2/core/containers"
	apparmorhost "github.com/containerd/containerd/v2/pkg/apparmor"
	"github.com/containerd/containerd/v2/pkg/cap"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/mountinfo"
	"github.com/moby/sys/signal"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/internal/expand"
	"github.com/podvisor/podvisor/supervise"
)

// groupAnnotation makes the runc shim serve every container carrying the
// same value from one shim process (containerd's runc v2 shim "grouping").
const groupAnnotation = "io.containerd.runc.v2.group"

// containerArgs merges command and args with the image's entrypoint and cmd
// as Kubernetes does (the "Notes" table of the Container.Command docs).
func containerArgs(c *v1.Container, entrypoint, cmd []string) []string {
	switch {
	case len(c.Command) > 0:
		return append(slices.Clone(c.Command), c.Args...)
	case len(c.Args) > 0:
		return append(slices.Clone(entrypoint), c.Args...)
	default:
		return append(slices.Clone(entrypoint), cmd...)
	}
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, a := range in {
		out[i] = expand.Vars(a, lookup)
	}
	return out
}

// containerEnv builds the container's env list: each value may refer to
// variables defined earlier in the list with $(VAR) (kubelet's
// makeEnvironmentVariables), for a config without a resolved Env: values
// only, valueFrom is supervise's to resolve.
func containerEnv(c *v1.Container) []string {
	defined := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := defined[k]; return v, ok }
	var out []string
	for _, e := range c.Env {
		v := expand.Vars(e.Value, lookup)
		defined[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out
}

// envLookup returns an expansion lookup over a KEY=VALUE list (last wins).
func envLookup(env []string) func(string) (string, bool) {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// host is what a container's spec depends on beyond its pod: facts of
// this machine, probed once, and the image lookup; tests replace them.
type host struct {
	// cgroupRoot is where the cgroup hierarchies are mounted.
	cgroupRoot string
	// cgroupV2 says cgroupRoot is the unified hierarchy; cgroupSharedOpts
	// are the options of its mount that a container sharing the host's
	// cgroup namespace must repeat (nsdelegate, memory_recursiveprot): its
	// cgroup2 mount is the host's superblock, and would drop them.
	cgroupV2         bool
	cgroupSharedOpts []string
	// cgroupV1Mounts are the mount points of the v1 hierarchies, one for
	// each, when runc moves a container into every one of them (nil on
	// v2, or when a hierarchy is one runc may leave it out of).
	cgroupV1Mounts []string
	// appArmor says AppArmor is enabled (containerd's HostSupports: the
	// module enabled, securityfs mounted, apparmor_parser present).
	appArmor bool
	// appArmorLoaded reports whether a profile is loaded in the kernel.
	appArmorLoaded func(string) (bool, error)
	// seccompRoot is where Localhost seccomp profiles are
	// (--seccomp-profile-root).
	seccompRoot string
	// hostname is the node's hostname.
	hostname func() (string, error)
	// lookupMount returns the mount holding a path (the source of an
	// rslave or rshared volume mount).
	lookupMount func(string) (*mountinfo.Info, error)
	// imageUser gives the USER of the container's image (specOpts sets
	// it per container).
	imageUser imageUserFunc
	// identities remembers the users found in images (nil: none are).
	identities *identities
}

// thisHost is the machine podvisor runs on.
var thisHost = sync.OnceValue(func() host {
	v2 := cgroupfs.IsV2("/sys/fs/cgroup")
	return host{
		cgroupRoot:       "/sys/fs/cgroup",
		cgroupV2:         v2,
		cgroupSharedOpts: cgroupSharedOpts(v2, "/sys/fs/cgroup"),
		cgroupV1Mounts:   cgroupV1Mounts(v2),
		appArmor:         apparmorhost.HostSupports(),
		appArmorLoaded:   appArmorLoaded,
		hostname:         os.Hostname,
		lookupMount:      lookupMount,
	}
})

// specOpts returns the OCI spec options for one container, applied after
// containerd's default spec and the image config, whose ENTRYPOINT, CMD
// and USER are given.
func specOpts(in supervise.ContainerConfig, imageEntrypoint, imageCmd []string, imageUser string, ids *identities, seccompRoot string) ([]oci.SpecOpts, error) {
	h := thisHost()
	h.imageUser, h.identities, h.seccompRoot = knownUser(imageUser), ids, seccompRoot
	return h.specOpts(in, imageEntrypoint, imageCmd)
}

func (h host) specOpts(in supervise.ContainerConfig, imageEntrypoint, imageCmd []string) ([]oci.SpecOpts, error) {
	pod, c := in.Pod, in.Container
	env := in.Env
	if env == nil {
		env = containerEnv(c)
	}
	lookup := envLookup(env)
	// $(VAR) is expanded in the manifest's command and args only, never in
	// the image's ENTRYPOINT or CMD (kubelet expands the container's own).
	expanded := *c
	expanded.Command, expanded.Args = expandAll(c.Command, lookup), expandAll(c.Args, lookup)
	args := containerArgs(&expanded, imageEntrypoint, imageCmd)
	if len(args) == 0 {
		return nil, fmt.Errorf("no command specified: the image has no entrypoint or cmd and the container sets none")
	}
	// HOSTNAME as the CRI plugin sets it: the pod's hostname, the node's
	// with hostNetwork (whose UTS namespace is the node's); the image's
	// ENV and the container's env override it.
	hostname := in.Hostname
	if pod.Spec.HostNetwork {
		h, err := h.hostname()
		if err != nil {
			return nil, fmt.Errorf("node hostname: %w", err)
		}
		hostname = h
	}
	opts := []oci.SpecOpts{
		oci.WithProcessArgs(args...),
		withDefaultEnv("HOSTNAME", hostname),
		oci.WithEnv(env),
		oci.WithoutRunMount,
		withoutRlimits,
		oci.WithAnnotations(map[string]string{groupAnnotation: in.SandboxID}),
		oci.WithCgroup(in.CgroupsPath),
		withOOMScoreAdj(in.OOMScoreAdj),
	}
	if c.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(c.WorkingDir))
	}
	if c.TTY {
		// A terminal as the CRI plugin gives one, with TERM=xterm unless
		// the image or the container sets TERM (containerd's oci.WithTTY
		// would append a second TERM).
		opts = append(opts, withTerminal, withDefaultEnv("TERM", "xterm"))
	}

	// Namespaces: the pod's network and IPC namespaces are shared files;
	// UTS is per container with the pod's hostname (host UTS with
	// hostNetwork, as CRI does); PID is per container unless hostPID or
	// shareProcessNamespace.
	if pod.Spec.HostNetwork {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace))
	} else {
		opts = append(opts,
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: in.NetNS}),
			oci.WithHostname(in.Hostname))
	}
	if pod.Spec.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	} else {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.IPCNamespace, Path: in.IPCNS}))
	}
	if pod.Spec.HostPID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	} else if in.PIDNS != "" {
		// shareProcessNamespace: the pod init's, as the CRI's
		// NamespaceMode POD joins the sandbox's.
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: in.PIDNS}))
	}
	opts = append(opts, withSysctls(pod))

	// /dev/shm is the pod's (or the host's with hostIPC); user mounts
	// replace defaults at the same destination.
	shm := specs.Mount{Destination: "/dev/shm", Type: "bind", Source: in.Shm, Options: []string{"rbind", "rw", "nosuid", "nodev", "noexec"}}
	if pod.Spec.HostIPC {
		shm.Source = "/dev/shm"
	}
	// The container's own cgroups at /sys/fs/cgroup, read-only (read-write
	// when privileged), as the CRI plugin mounts them: what a JVM or Go's
	// GOMAXPROCS reads to size itself to its limits. On cgroup v2 a
	// container that is not privileged has its own cgroup namespace, so the
	// mount shows its cgroup as the root. On v1 the spec holds what runc
	// would make of a cgroup mount (cgroupV1Binds).
	sc := effectiveSecurityContext(pod, c)
	privileged := isPrivileged(sc)
	cg := []specs.Mount{{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}}}
	switch {
	case h.cgroupV2 && !privileged:
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
	case h.cgroupV2:
		cg[0].Options = append(cg[0].Options, h.cgroupSharedOpts...)
	case h.cgroupV1Mounts != nil && filepath.IsAbs(in.CgroupsPath):
		cg = cgroupV1Binds(h.cgroupV1Mounts, in.CgroupsPath, privileged)
	}
	mounts := withoutShadowed(append([]specs.Mount{shm}, cg...), in.Mounts)
	opts = append(opts, withReplacedMounts(append(mounts, in.Mounts...)))
	rootProp, err := rootfsPropagation(in.Mounts, h.lookupMount)
	if err != nil {
		return nil, err
	}
	opts = append(opts, withRootfsPropagation(rootProp))

	// Resources.
	r := in.Resources
	opts = append(opts, oci.WithCPUShares(r.CPUShares))
	if r.CPUQuota > 0 {
		opts = append(opts, oci.WithCPUCFS(r.CPUQuota, r.CPUPeriod))
	}
	if r.MemoryLimit > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(r.MemoryLimit)))
		if swapAccounted(h.cgroupRoot, in.CgroupsPath) {
			opts = append(opts, withNoSwap(r.MemoryLimit))
		}
	}

	opts = append(opts, withIdentity(pod, c, in.Image.ID, h.imageUser, h.identities))
	sec, err := h.securityOpts(sc)
	if err != nil {
		return nil, err
	}
	return append(opts, sec...), nil
}

// securityOpts applies the container's effective securityContext beyond
// its identity. Fields that manifest validation rejects never reach here.
func (h host) securityOpts(sc *v1.SecurityContext) ([]oci.SpecOpts, error) {
	var opts []oci.SpecOpts
	privileged := isPrivileged(sc)
	if privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	} else if sc.Capabilities != nil {
		add, drop := capNames(sc.Capabilities.Add), capNames(sc.Capabilities.Drop)
		if slices.Contains(add, "CAP_ALL") {
			opts = append(opts, oci.WithCapabilities(cap.Known()))
		} else if len(add) > 0 {
			opts = append(opts, oci.WithAddedCapabilities(add))
		}
		if slices.Contains(drop, "CAP_ALL") {
			opts = append(opts, withDropAllExcept(add))
		} else if len(drop) > 0 {
			opts = append(opts, oci.WithDroppedCapabilities(drop))
		}
	}
	// Kubernetes' default for allowPrivilegeEscalation is true, so
	// no_new_privs is set only when it is explicitly false (CRI does the
	// same); containerd's default spec sets it, so clear it otherwise.
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		opts = append(opts, oci.WithNoNewPrivileges)
	} else {
		opts = append(opts, oci.WithNewPrivileges)
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	sec, err := seccompOpts(sc.SeccompProfile, privileged, h.seccompRoot)
	if err != nil {
		return nil, err
	}
	opts = append(opts, sec...)
	aa, err := decideAppArmor(sc.AppArmorProfile, privileged, h.appArmor, h.appArmorLoaded)
	if err != nil {
		return nil, err
	}
	return append(opts, aa.opts()...), nil
}

func capNames(cs []v1.Capability) []string {
	var out []string
	for _, c := range cs {
		n := strings.ToUpper(string(c))
		if !strings.HasPrefix(n, "CAP_") {
			n = "CAP_" + n
		}
		out = append(out, n)
	}
	return out
}

func withDropAllExcept(keep []string) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		keep = slices.DeleteFunc(slices.Clone(keep), func(s string) bool { return s == "CAP_ALL" })
		return oci.WithCapabilities(keep)(ctx, cl, c, s)
	}
}

// withDefaultEnv sets name=value unless the environment (the image's, at
// this point) already sets name.
func withDefaultEnv(name, value string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		for _, kv := range s.Process.Env {
			if k, _, _ := strings.Cut(kv, "="); k == name {
				return nil
			}
		}
		s.Process.Env = append(s.Process.Env, name+"="+value)
		return nil
	}
}

func withTerminal(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	s.Process.Terminal = true
	return nil
}

func withoutRlimits(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	// Like CRI: the container inherits the shim's limits instead of
	// containerd's default 1024 open files.
	s.Process.Rlimits = nil
	return nil
}

func withOOMScoreAdj(adj int) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		s.Process.OOMScoreAdj = &adj
		return nil
	}
}

// withoutShadowed returns defaults but those a mount of the container's own
// replaces or hides: at the same destination or below it (a volume at
// /sys/fs/cgroup hides the binds on cgroup v1's tmpfs there).
func withoutShadowed(defaults, own []specs.Mount) []specs.Mount {
	return slices.DeleteFunc(defaults, func(d specs.Mount) bool {
		return slices.ContainsFunc(own, func(m specs.Mount) bool {
			dst := filepath.Clean(m.Destination)
			return d.Destination == dst || strings.HasPrefix(d.Destination, dst+"/")
		})
	})
}

// cgroupSharedOpts returns the nsdelegate and memory_recursiveprot options
// of the cgroup2 mount at root (none on v1, or when it cannot be read).
func cgroupSharedOpts(v2 bool, root string) []string {
	if !v2 {
		return nil
	}
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(root))
	if err != nil || len(ms) == 0 {
		return nil
	}
	var out []string
	for _, o := range strings.Split(ms[len(ms)-1].VFSOptions, ",") {
		if o == "nsdelegate" || o == "memory_recursiveprot" {
			out = append(out, o)
		}
	}
	return out
}

// runcJoins are the v1 controllers (and the one named hierarchy) whose
// cgroup runc creates for a container and moves it into, with an absolute
// cgroupsPath: at the hierarchy's mount point joined with that path. A
// host with a v1 hierarchy of none of them (misc, or a named one) keeps
// runc's own cgroup mount.
var runcJoins = map[string]bool{
	"cpuset": true, "cpu": true, "cpuacct": true, "memory": true, "devices": true,
	"freezer": true, "blkio": true, "pids": true, "hugetlb": true, "net_cls": true,
	"net_prio": true, "perf_event": true, "rdma": true, "name=systemd": true,
}

// cgroupV1Mounts returns the mount points of this host's v1 hierarchies,
// or nil (v2, no hierarchy, one runc does not join, or mountinfo cannot
// be read).
func cgroupV1Mounts(v2 bool) []string {
	if v2 {
		return nil
	}
	ms, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup"))
	if err != nil {
		return nil
	}
	return joinedHierarchies(ms)
}

// joinedHierarchies returns the mount point of each v1 hierarchy in ms,
// the first where one is mounted twice (runc's choice), or nil when a
// hierarchy has none of runcJoins' controllers.
func joinedHierarchies(ms []*mountinfo.Info) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range ms {
		if m.FSType != "cgroup" {
			continue
		}
		var ctrls []string
		for _, o := range strings.Split(m.VFSOptions, ",") {
			if runcJoins[o] {
				ctrls = append(ctrls, o)
			}
		}
		if len(ctrls) == 0 {
			return nil
		}
		if seen[ctrls[0]] {
			continue
		}
		for _, c := range ctrls {
			seen[c] = true
		}
		out = append(out, m.Mountpoint)
	}
	return out
}

// cgroupV1Binds are the mounts runc makes of a cgroup mount at
// /sys/fs/cgroup on v1, written out so that runc's init need not find them
// in /proc/self/mountinfo, whose reading costs more with every mount on
// the host (on a busy node most of a container's setup): a tmpfs (mode
// 755), and on it, per hierarchy mounted at m, a bind of m's cgroup at
// cgroupsPath to /sys/fs/cgroup/<base of m>, read-only unless privileged.
// Where runc links the controllers of a merged hierarchy (cpu and cpuacct
// to cpu,cpuacct), each is a second bind of the same cgroup.
func cgroupV1Binds(hierarchies []string, cgroupsPath string, privileged bool) []specs.Mount {
	mode := "ro"
	if privileged {
		mode = "rw"
	}
	out := []specs.Mount{{Destination: "/sys/fs/cgroup", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "nodev", "relatime", "mode=755"}}}
	bind := func(src, name string) {
		out = append(out, specs.Mount{Destination: "/sys/fs/cgroup/" + name, Type: "bind", Source: src,
			Options: []string{"rbind", mode, "nosuid", "noexec", "nodev", "relatime"}})
	}
	names := map[string]bool{}
	for _, m := range hierarchies {
		names[filepath.Base(m)] = true
	}
	for _, m := range hierarchies {
		src, name := filepath.Join(m, cgroupsPath), filepath.Base(m)
		bind(src, name)
		if !strings.Contains(name, ",") {
			continue
		}
		for _, alias := range strings.Split(name, ",") {
			if !names[alias] {
				names[alias] = true
				bind(src, alias)
			}
		}
	}
	return out
}

func isPrivileged(sc *v1.SecurityContext) bool { return sc.Privileged != nil && *sc.Privileged }

// withReplacedMounts adds mounts, dropping any existing mount with the same
// destination first.
func withReplacedMounts(ms []specs.Mount) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		dests := map[string]bool{}
		for _, m := range ms {
			dests[m.Destination] = true
		}
		s.Mounts = slices.DeleteFunc(s.Mounts, func(m specs.Mount) bool { return dests[m.Destination] })
		s.Mounts = append(s.Mounts, ms...)
		return nil
	}
}

// containerStopSignal is the container's lifecycle.stopSignal, else the
// image's STOPSIGNAL, else SIGTERM (kubelet's order).
func containerStopSignal(c *v1.Container, imageStopSignal string) syscall.Signal {
	if c != nil && c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
		if s, err := signal.ParseSignal(string(*c.Lifecycle.StopSignal)); err == nil {
			return s
		}
	}
	return stopSignal(imageStopSignal)
}

// stopSignal is the image's StopSignal or SIGTERM.
func stopSignal(imageStopSignal string) syscall.Signal {
	if imageStopSignal != "" {
		if s, err := signal.ParseSignal(imageStopSignal); err == nil {
			return s
		}
	}
	return syscall.SIGTERM
}
