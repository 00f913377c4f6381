package containerd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/supervise"
)

func TestPodInitSpec(t *testing.T) {
	pod := &v1.Pod{}
	base := supervise.ContainerConfig{
		ID: "init1", PodInit: true, Pod: pod, SandboxID: "sb1",
		NetNS: "/run/pv/sb1/net", IPCNS: "/run/pv/sb1/ipc", Hostname: "web",
		CgroupsPath: "/pv/podu/init1", OOMScoreAdj: -998,
	}
	hostNet := base
	hostNet.NetNS, hostNet.IPCNS = "", ""
	for _, tc := range []struct {
		name     string
		cfg      supervise.ContainerConfig
		ns       []specs.LinuxNamespace
		hostname string
	}{
		{"pod namespaces", base, []specs.LinuxNamespace{
			{Type: specs.PIDNamespace}, {Type: specs.MountNamespace},
			{Type: specs.NetworkNamespace, Path: "/run/pv/sb1/net"}, {Type: specs.UTSNamespace},
			{Type: specs.IPCNamespace, Path: "/run/pv/sb1/ipc"},
		}, "web"},
		{"host network and IPC", hostNet, []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := podInitSpec(tc.cfg, "/usr/bin/podvisor-log-driver", "/run/pv/pod-init")
			if !slices.Equal(s.Linux.Namespaces, tc.ns) {
				t.Errorf("namespaces %+v, want %+v", s.Linux.Namespaces, tc.ns)
			}
			if s.Hostname != tc.hostname {
				t.Errorf("hostname %q, want %q", s.Hostname, tc.hostname)
			}
			if !slices.Equal(s.Process.Args, []string{"/podvisor", "pod-init"}) {
				t.Errorf("args %q", s.Process.Args)
			}
			if s.Root.Path != "/run/pv/pod-init" || !s.Root.Readonly {
				t.Errorf("root %+v, want /run/pv/pod-init read-only", s.Root)
			}
			if u := s.Process.User; u.UID != 65535 || u.GID != 65535 || len(u.AdditionalGids) > 0 {
				t.Errorf("user %+v, want 65535:65535", u)
			}
			if c := s.Process.Capabilities; c == nil || len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) > 0 || !s.Process.NoNewPrivileges {
				t.Errorf("capabilities %+v, no_new_privs %v: want none, and set", c, s.Process.NoNewPrivileges)
			}
			if *s.Process.OOMScoreAdj != -998 || *s.Linux.Resources.CPU.Shares != 2 || s.Linux.CgroupsPath != "/pv/podu/init1" {
				t.Errorf("oom_score_adj %d, shares %d, cgroup %q", *s.Process.OOMScoreAdj, *s.Linux.Resources.CPU.Shares, s.Linux.CgroupsPath)
			}
			if s.Annotations[groupAnnotation] != "sb1" {
				t.Errorf("shim group %q, want the sandbox's", s.Annotations[groupAnnotation])
			}
			i := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/podvisor" })
			if i < 0 || s.Mounts[i].Source != "/usr/bin/podvisor-log-driver" || !slices.Contains(s.Mounts[i].Options, "ro") || slices.Contains(s.Mounts[i].Options, "noexec") {
				t.Errorf("mounts %+v: want the binary at /podvisor, read-only, executable", s.Mounts)
			}
		})
	}
}

func TestPodInitRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "pod-init")
	for range 2 { // made once, then found
		if err := podInitRoot(root); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"dev", "proc", "podvisor"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if st, err := os.Stat(root); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("root: %v %v, want mode 0755 (the init's user reads it)", st.Mode(), err)
	}
}

// A container of a pod that shares its process namespace joins the pod
// init's by path; without it, its own; with hostPID the host's.
func TestSpecPIDNamespace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hostPID bool
		pidns   string
		want    []specs.LinuxNamespace
	}{
		{"own", false, "", []specs.LinuxNamespace{{Type: specs.PIDNamespace}}},
		{"shared", false, "/run/pv/sb/pid", []specs.LinuxNamespace{{Type: specs.PIDNamespace, Path: "/run/pv/sb/pid"}}},
		{"host", true, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostPID: tc.hostPID}}
			c := &v1.Container{Name: "c", Command: []string{"true"}}
			opts, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: pod, Container: c, SandboxID: "sb", PIDNS: tc.pidns}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []specs.LinuxNamespace
			for _, ns := range applyOpts(t, opts).Linux.Namespaces {
				if ns.Type == specs.PIDNamespace {
					got = append(got, ns)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("PID namespace %+v, want %+v", got, tc.want)
			}
		})
	}
}
