package containerd

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podvisor/podvisor/supervise"
)

// The four cases of the Container.Command documentation ("Notes" table in
// the Kubernetes docs, "Define a Command and Arguments for a Container").
func TestContainerArgs(t *testing.T) {
	ep, cmd := []string{"/ep-1"}, []string{"foo", "bar"}
	for _, tc := range []struct {
		command, args, want []string
	}{
		{nil, nil, []string{"/ep-1", "foo", "bar"}},
		{[]string{"/ep-2"}, nil, []string{"/ep-2"}},
		{nil, []string{"zoo", "boo"}, []string{"/ep-1", "zoo", "boo"}},
		{[]string{"/ep-2"}, []string{"zoo", "boo"}, []string{"/ep-2", "zoo", "boo"}},
	} {
		c := &v1.Container{Command: tc.command, Args: tc.args}
		if got := containerArgs(c, ep, cmd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("command %q args %q: got %q, want %q", tc.command, tc.args, got, tc.want)
		}
	}
}

// Env values may refer to variables defined earlier in the list, not later
// ones (kubelet's makeEnvironmentVariables).
func TestContainerEnv(t *testing.T) {
	c := &v1.Container{Env: []v1.EnvVar{
		{Name: "A", Value: "a"},
		{Name: "B", Value: "$(A)-b"},
		{Name: "C", Value: "$(D)-c"},
		{Name: "D", Value: "d"},
		{Name: "E", Value: "$$(A)"},
	}}
	want := []string{"A=a", "B=a-b", "C=$(D)-c", "D=d", "E=$(A)"}
	if got := containerEnv(c); !reflect.DeepEqual(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
}

// testPasswd and testGroup are the image's /etc/passwd and /etc/group in
// unit tests: app (1000) belongs to wheel and staff besides its own group.
const (
	testPasswd = "root:x:0:0:root:/root:/bin/sh\n" +
		"app:x:1000:1000::/home/app:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	testGroup = "root:x:0:\n" +
		"wheel:x:10:app\n" +
		"staff:x:50:other,app\n" +
		"app:x:1000:\n" +
		"nobody:x:65534:\n"
)

// testHost is a host without AppArmor or swap accounting, named "node",
// whose images have no USER unless user says otherwise.
func testHost(t *testing.T) host {
	return host{
		cgroupRoot:     t.TempDir(),
		appArmorLoaded: func(string) (bool, error) { return false, nil },
		hostname:       func() (string, error) { return "node", nil },
		imageUser:      fixedUser(""),
	}
}

func fixedUser(u string) imageUserFunc {
	return func(context.Context, oci.Client, *containers.Container, string) (string, error) { return u, nil }
}

// applyOpts applies opts after containerd's default spec and what
// oci.WithImageConfig does for an image without USER (root, with root's
// groups), on a rootfs that holds testPasswd and testGroup.
func applyOpts(t *testing.T, opts []oci.SpecOpts) *oci.Spec {
	t.Helper()
	s, err := tryOpts(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryOpts(t *testing.T, opts []oci.SpecOpts) (*oci.Spec, error) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"passwd": testPasswd, "group": testGroup} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &oci.Spec{}
	ctx := namespaces.WithNamespace(context.Background(), "test")
	ctr := &containers.Container{ID: "x"}
	if err := oci.WithDefaultSpec()(ctx, nil, ctr, s); err != nil {
		t.Fatal(err)
	}
	s.Root.Path = root
	s.Process.Env = []string{"PATH=/bin"}
	if err := oci.WithAdditionalGIDs("root")(ctx, nil, ctr, s); err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		if err := o(ctx, nil, ctr, s); err != nil {
			return s, err
		}
	}
	return s, nil
}

func TestSpecOpts(t *testing.T) {
	f, tr := false, true
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-n", Namespace: "default"}}
	c := &v1.Container{
		Name:    "c",
		Command: []string{"sh", "-c", "echo $(GREETING)"},
		Env:     []v1.EnvVar{{Name: "GREETING", Value: "hi"}},
		SecurityContext: &v1.SecurityContext{
			AllowPrivilegeEscalation: &f,
			ReadOnlyRootFilesystem:   &tr,
			Capabilities:             &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"chown"}},
		},
	}
	sb := supervise.ContainerConfig{SandboxID: "sb", NetNS: "/run/x/net", IPCNS: "/run/x/ipc", Shm: "/run/x/shm"}
	opts, err := testHost(t).specOpts(supervise.ContainerConfig{
		Pod: pod, Container: c, SandboxID: sb.SandboxID, NetNS: sb.NetNS, IPCNS: sb.IPCNS, Shm: sb.Shm, Hostname: "p-n",
		Mounts:      []specs.Mount{{Destination: "/data", Source: "/host", Type: "bind", Options: []string{"rbind"}}},
		CgroupsPath: "/podvisor/podu/cid", OOMScoreAdj: 5,
		Resources: supervise.Resources{CPUShares: 102, CPUQuota: 25000, CPUPeriod: 100000, MemoryLimit: 64 << 20},
	}, []string{"/ignored"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := applyOpts(t, opts)
	if want := []string{"sh", "-c", "echo hi"}; !reflect.DeepEqual(s.Process.Args, want) {
		t.Errorf("args = %q, want %q", s.Process.Args, want)
	}
	if s.Hostname != "p-n" || s.Annotations[groupAnnotation] != "sb" || s.Linux.CgroupsPath != "/podvisor/podu/cid" {
		t.Errorf("hostname %q group %q cgroup %q", s.Hostname, s.Annotations[groupAnnotation], s.Linux.CgroupsPath)
	}
	nsPath := map[specs.LinuxNamespaceType]string{}
	for _, ns := range s.Linux.Namespaces {
		nsPath[ns.Type] = ns.Path
	}
	if nsPath[specs.NetworkNamespace] != sb.NetNS || nsPath[specs.IPCNamespace] != sb.IPCNS {
		t.Errorf("namespaces = %+v", s.Linux.Namespaces)
	}
	if _, ok := nsPath[specs.PIDNamespace]; !ok {
		t.Error("no private pid namespace")
	}
	var shm, data int
	for _, m := range s.Mounts {
		switch m.Destination {
		case "/dev/shm":
			shm++
			if m.Source != sb.Shm {
				t.Errorf("/dev/shm source %q", m.Source)
			}
		case "/data":
			data++
		case "/run":
			t.Error("/run tmpfs mount kept (CRI removes it)")
		}
	}
	if shm != 1 || data != 1 {
		t.Errorf("/dev/shm mounts %d, /data mounts %d", shm, data)
	}
	r := s.Linux.Resources
	if *r.CPU.Shares != 102 || *r.CPU.Quota != 25000 || *r.CPU.Period != 100000 || *r.Memory.Limit != 64<<20 {
		t.Errorf("resources shares %d quota %d period %d mem %d", *r.CPU.Shares, *r.CPU.Quota, *r.CPU.Period, *r.Memory.Limit)
	}
	if !s.Process.NoNewPrivileges || !s.Root.Readonly || s.Process.Rlimits != nil || *s.Process.OOMScoreAdj != 5 {
		t.Errorf("nnp %v ro %v rlimits %v oom %d", s.Process.NoNewPrivileges, s.Root.Readonly, s.Process.Rlimits, *s.Process.OOMScoreAdj)
	}
	caps := s.Process.Capabilities.Bounding
	if !slices.Contains(caps, "CAP_NET_ADMIN") || slices.Contains(caps, "CAP_CHOWN") {
		t.Errorf("capabilities = %v", caps)
	}
}

// Kubernetes' default allowPrivilegeEscalation is true: no_new_privs off,
// although containerd's default spec turns it on.
func TestSpecDefaultsAllowEscalation(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true, HostIPC: true, HostPID: true}}
	c := &v1.Container{Name: "c", Command: []string{"true"}}
	opts, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: pod, Container: c, SandboxID: "sb"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := applyOpts(t, opts)
	if s.Process.NoNewPrivileges {
		t.Error("no_new_privs set by default")
	}
	for _, ns := range s.Linux.Namespaces {
		switch ns.Type {
		case specs.NetworkNamespace, specs.IPCNamespace, specs.PIDNamespace, specs.UTSNamespace:
			t.Errorf("host pod has a private %s namespace", ns.Type)
		}
	}
	for _, m := range s.Mounts {
		if m.Destination == "/dev/shm" && m.Source != "/dev/shm" {
			t.Errorf("hostIPC pod /dev/shm source %q", m.Source)
		}
	}
}

// Every container sees its cgroups at /sys/fs/cgroup as the CRI plugin
// mounts them: read-only, read-write when privileged; on cgroup v2 in a
// cgroup namespace of its own unless privileged, and a privileged one
// repeats the host mount's nsdelegate; a volume at /sys/fs/cgroup wins.
func TestSpecCgroupMount(t *testing.T) {
	tr := true
	for _, tc := range []struct {
		name       string
		v2         bool
		privileged bool
		volume     bool
		wantMode   string // "" no cgroup mount of ours
		wantOpt    string
		wantNS     bool
	}{
		{name: "v1", wantMode: "ro"},
		{name: "v1 privileged", privileged: true, wantMode: "rw"},
		{name: "v2", v2: true, wantMode: "ro", wantNS: true},
		{name: "v2 privileged", v2: true, privileged: true, wantMode: "rw", wantOpt: "nsdelegate"},
		{name: "volume there", volume: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost(t)
			h.cgroupV2, h.cgroupSharedOpts = tc.v2, []string{"nsdelegate"}
			c := &v1.Container{Name: "c", Command: []string{"true"}}
			if tc.privileged {
				c.SecurityContext = &v1.SecurityContext{Privileged: &tr}
			}
			in := supervise.ContainerConfig{Pod: &v1.Pod{}, Container: c, SandboxID: "sb", Shm: "/run/x/shm"}
			if tc.volume {
				in.Mounts = []specs.Mount{{Destination: "/sys/fs/cgroup/", Source: "/host", Type: "bind", Options: []string{"rbind"}}}
			}
			opts, err := h.specOpts(in, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := applyOpts(t, opts)
			var ours []specs.Mount
			for _, m := range s.Mounts {
				if m.Type == "cgroup" {
					ours = append(ours, m)
				}
			}
			switch {
			case tc.wantMode == "" && len(ours) != 0:
				t.Fatalf("cgroup mounts %+v beside the container's own volume there", ours)
			case tc.wantMode == "":
			case len(ours) != 1 || ours[0].Destination != "/sys/fs/cgroup":
				t.Fatalf("cgroup mounts %+v, want one at /sys/fs/cgroup", ours)
			case !slices.Contains(ours[0].Options, tc.wantMode) || slices.Contains(ours[0].Options, map[string]string{"ro": "rw", "rw": "ro"}[tc.wantMode]):
				t.Errorf("cgroup mount options %v, want %s", ours[0].Options, tc.wantMode)
			case tc.wantOpt != "" && !slices.Contains(ours[0].Options, tc.wantOpt):
				t.Errorf("cgroup mount options %v, want %s too", ours[0].Options, tc.wantOpt)
			case tc.wantOpt == "" && slices.Contains(ours[0].Options, "nsdelegate"):
				t.Errorf("cgroup mount options %v: nsdelegate is the host mount's, for a shared namespace only", ours[0].Options)
			}
			hasNS := slices.ContainsFunc(s.Linux.Namespaces, func(ns specs.LinuxNamespace) bool { return ns.Type == specs.CgroupNamespace })
			if hasNS != tc.wantNS {
				t.Errorf("cgroup namespace %v, want %v", hasNS, tc.wantNS)
			}
		})
	}
}

// On cgroup v1 the spec holds what runc makes of a cgroup mount, so that
// runc's init does not read /proc/self/mountinfo: a tmpfs at /sys/fs/cgroup
// and on it a bind of the container's cgroup of each hierarchy (read-only
// unless privileged), the controllers of a merged one bound again under
// their own names; a volume at /sys/fs/cgroup hides them all, one below it
// replaces ours at its place; without a known cgroup it is runc's mount.
func TestSpecCgroupV1Binds(t *testing.T) {
	tr := true
	hier := []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/systemd"}
	const cg = "/pv/podU/abc"
	for _, tc := range []struct {
		name       string
		privileged bool
		cgroupPath string
		volume     string
		want       []string // "dest type source mode"
	}{
		{name: "binds", cgroupPath: cg, want: []string{
			"/sys/fs/cgroup tmpfs tmpfs mode=755",
			"/sys/fs/cgroup/cpu,cpuacct bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc ro",
			"/sys/fs/cgroup/cpu bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc ro",
			"/sys/fs/cgroup/cpuacct bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc ro",
			"/sys/fs/cgroup/memory bind /sys/fs/cgroup/memory/pv/podU/abc ro",
			"/sys/fs/cgroup/systemd bind /sys/fs/cgroup/systemd/pv/podU/abc ro",
		}},
		{name: "privileged", privileged: true, cgroupPath: cg, want: []string{
			"/sys/fs/cgroup tmpfs tmpfs mode=755",
			"/sys/fs/cgroup/cpu,cpuacct bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc rw",
			"/sys/fs/cgroup/cpu bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc rw",
			"/sys/fs/cgroup/cpuacct bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc rw",
			"/sys/fs/cgroup/memory bind /sys/fs/cgroup/memory/pv/podU/abc rw",
			"/sys/fs/cgroup/systemd bind /sys/fs/cgroup/systemd/pv/podU/abc rw",
		}},
		{name: "volume at the root", cgroupPath: cg, volume: "/sys/fs/cgroup/"},
		{name: "volume below", cgroupPath: cg, volume: "/sys/fs/cgroup/memory", want: []string{
			"/sys/fs/cgroup tmpfs tmpfs mode=755",
			"/sys/fs/cgroup/cpu,cpuacct bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc ro",
			"/sys/fs/cgroup/cpu bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc ro",
			"/sys/fs/cgroup/cpuacct bind /sys/fs/cgroup/cpu,cpuacct/pv/podU/abc ro",
			"/sys/fs/cgroup/systemd bind /sys/fs/cgroup/systemd/pv/podU/abc ro",
		}},
		{name: "no cgroup path", want: []string{"/sys/fs/cgroup cgroup cgroup ro"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost(t)
			h.cgroupV1Mounts = hier
			c := &v1.Container{Name: "c", Command: []string{"true"}}
			if tc.privileged {
				c.SecurityContext = &v1.SecurityContext{Privileged: &tr}
			}
			in := supervise.ContainerConfig{Pod: &v1.Pod{}, Container: c, SandboxID: "sb", Shm: "/run/x/shm", CgroupsPath: tc.cgroupPath}
			if tc.volume != "" {
				in.Mounts = []specs.Mount{{Destination: tc.volume, Source: "/host", Type: "bind", Options: []string{"rbind"}}}
			}
			opts, err := h.specOpts(in, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range applyOpts(t, opts).Mounts {
				if !strings.HasPrefix(m.Destination, "/sys/fs/cgroup") || m.Source == "/host" {
					continue
				}
				mode := "?"
				for _, o := range m.Options {
					if o == "ro" || o == "rw" || strings.HasPrefix(o, "mode=") {
						mode = o
					}
				}
				got = append(got, strings.Join([]string{m.Destination, m.Type, m.Source, mode}, " "))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("mounts at /sys/fs/cgroup:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The hierarchies whose cgroups the spec binds: each mounted once (the
// first mount of a hierarchy mounted twice), and none at all when one is a
// hierarchy runc may not move a container into.
func TestJoinedHierarchies(t *testing.T) {
	mi := func(point, opts string) *mountinfo.Info {
		return &mountinfo.Info{Mountpoint: point, FSType: "cgroup", VFSOptions: opts}
	}
	host := []*mountinfo.Info{
		mi("/sys/fs/cgroup/cpu,cpuacct", "rw,cpu,cpuacct"),
		mi("/sys/fs/cgroup/memory", "rw,memory"),
		mi("/sys/fs/cgroup/systemd", "rw,xattr,name=systemd"),
		{Mountpoint: "/sys/fs/cgroup/unified", FSType: "cgroup2", VFSOptions: "rw"},
		mi("/run/other/memory", "rw,memory"),
	}
	want := []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/systemd"}
	if got := joinedHierarchies(host); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, extra := range []*mountinfo.Info{mi("/sys/fs/cgroup/misc", "rw,misc"), mi("/sys/fs/cgroup/elogind", "rw,name=elogind")} {
		if got := joinedHierarchies(append(slices.Clone(host), extra)); got != nil {
			t.Errorf("with %s: got %q, want none (runc's own mount)", extra.Mountpoint, got)
		}
	}
}

func TestSpecNoCommand(t *testing.T) {
	pod := &v1.Pod{}
	_, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: pod, Container: &v1.Container{Name: "c"}}, nil, nil)
	if err == nil {
		t.Fatal("a container with no command anywhere was accepted")
	}
}

// Every container has HOSTNAME as the CRI plugin sets it: the pod's
// hostname, the node's with hostNetwork; the image's ENV and the
// container's env win over it.
func TestSpecHostnameEnv(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		imageEnv    []string
		env         []v1.EnvVar
		want        string
	}{
		{name: "pod network", want: "HOSTNAME=p-n"},
		{name: "hostNetwork: the node's", hostNetwork: true, want: "HOSTNAME=node"},
		{name: "set by the container", env: []v1.EnvVar{{Name: "HOSTNAME", Value: "mine"}}, want: "HOSTNAME=mine"},
		{name: "set by the image", imageEnv: []string{"HOSTNAME=img"}, want: "HOSTNAME=img"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNetwork}}
			c := &v1.Container{Name: "c", Command: []string{"true"}, Env: tc.env}
			opts, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: pod, Container: c, Hostname: "p-n"}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			image := func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
				s.Process.Env = append(s.Process.Env, tc.imageEnv...)
				return nil
			}
			env := applyOpts(t, append([]oci.SpecOpts{image}, opts...)).Process.Env
			var got []string
			for _, kv := range env {
				if strings.HasPrefix(kv, "HOSTNAME=") {
					got = append(got, kv)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("HOSTNAME in env %q, want %q once", env, tc.want)
			}
		})
	}
}

// $(VAR) is expanded in the manifest's args, not in the image's ENTRYPOINT
// that they are appended to (issue 8: an image's literal "$(X)" stays).
func TestSpecExpandsOnlyManifestArgs(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}}
	c := &v1.Container{Name: "c", Args: []string{"$(A)"}, Env: []v1.EnvVar{{Name: "A", Value: "a"}}}
	opts, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: pod, Container: c, SandboxID: "sb"}, []string{"/ep", "$(A)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := applyOpts(t, opts)
	if want := []string{"/ep", "$(A)", "a"}; !reflect.DeepEqual(s.Process.Args, want) {
		t.Errorf("args = %q, want %q", s.Process.Args, want)
	}
}

// tty: true gives the process a terminal and TERM=xterm unless the
// container sets TERM, as the CRI plugin does.
func TestSpecTTY(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tty      bool
		env      []v1.EnvVar
		terminal bool
		wantTERM string
	}{
		{name: "no tty", wantTERM: ""},
		{name: "tty", tty: true, terminal: true, wantTERM: "TERM=xterm"},
		{name: "tty, TERM set", tty: true, env: []v1.EnvVar{{Name: "TERM", Value: "vt100"}}, terminal: true, wantTERM: "TERM=vt100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{Name: "c", Command: []string{"sh"}, TTY: tc.tty, Stdin: tc.tty, Env: tc.env}
			opts, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: &v1.Pod{}, Container: c, Hostname: "p-n"}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := applyOpts(t, opts)
			var term []string
			for _, kv := range s.Process.Env {
				if strings.HasPrefix(kv, "TERM=") {
					term = append(term, kv)
				}
			}
			if s.Process.Terminal != tc.terminal || strings.Join(term, ",") != tc.wantTERM {
				t.Errorf("terminal %v, TERM %q; want %v, %q", s.Process.Terminal, term, tc.terminal, tc.wantTERM)
			}
		})
	}
}

// A resolved Env (valueFrom, envFrom) is the process's env, and the
// manifest's command and args expand $(VAR) against it, as kubelet's.
func TestSpecResolvedEnv(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}}
	c := &v1.Container{Name: "c", Command: []string{"echo", "$(FROM_CM)"}, Env: []v1.EnvVar{{Name: "FROM_CM", ValueFrom: &v1.EnvVarSource{
		ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "k"}}}}}
	opts, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: pod, Container: c, SandboxID: "sb", Env: []string{"FROM_CM=v", "DB_USER=u"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := applyOpts(t, opts)
	if want := []string{"echo", "v"}; !reflect.DeepEqual(s.Process.Args, want) {
		t.Errorf("args = %q, want %q", s.Process.Args, want)
	}
	for _, kv := range []string{"FROM_CM=v", "DB_USER=u"} {
		if !slices.Contains(s.Process.Env, kv) {
			t.Errorf("env %q lacks %q", s.Process.Env, kv)
		}
	}
	if slices.Contains(s.Process.Env, "FROM_CM=") {
		t.Errorf("env %q holds the unresolved entry", s.Process.Env)
	}
}
