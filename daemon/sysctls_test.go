package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// allowedUnsafeSysctls: kubelet's list in the file, or the flag's
// comma-separated form; patterns kubelet refuses are refused.
func TestAllowedUnsafeSysctlsConfig(t *testing.T) {
	const header = "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\n"
	c := Default()
	if err := ReadConfig("c.yaml", []byte(header+"allowedUnsafeSysctls: [\"kernel.msg*\", net.core.somaxconn]\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.AllowedUnsafeSysctls != "kernel.msg*,net.core.somaxconn" {
		t.Fatalf("allowedUnsafeSysctls = %q", c.AllowedUnsafeSysctls)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{"allowedUnsafeSysctls: [vm.max_map_count]\n", `c.yaml:3: allowedUnsafeSysctls: the sysctls "vm.max_map_count" are not known to be namespaced`},
		{"allowedUnsafeSysctls: [\"kernel.*\"]\n", `the sysctls "kernel." are not known to be namespaced`},
		{"allowedUnsafeSysctls: [{a: b}]\n", `want a list of strings`},
	} {
		c := Default()
		err := ReadConfig("c.yaml", []byte(header+tc.file), &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
	c = Default()
	c.AllowedUnsafeSysctls = "kernel.sem, vm.swappiness"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `--allowed-unsafe-sysctls: the sysctls "vm.swappiness" are not known to be namespaced`) {
		t.Errorf("Validate = %v", err)
	}
	c = Default()
	c.SeccompProfileRoot = "seccomp"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `--seccomp-profile-root: "seccomp" is not an absolute directory`) {
		t.Errorf("Validate = %v", err)
	}
}

func TestSysctlAdmission(t *testing.T) {
	pod := func(hostNet bool, names ...string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, SecurityContext: &v1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	c := Default()
	c.AllowedUnsafeSysctls = "kernel.msg*"
	allow, err := c.sysctlAllowlist()
	if err != nil {
		t.Fatal(err)
	}
	admit := admitPod(allow)
	for _, tc := range []struct {
		pod          *v1.Pod
		reason, want string
	}{
		{pod(false, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "kernel.msgmax"), "", ""},
		{pod(false, "kernel.sem"), "SysctlForbidden", `forbidden sysctl: "kernel.sem" not allowlisted`},
		{pod(true, "net.ipv4.tcp_syncookies"), "SysctlForbidden", `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
	} {
		reason, msg := admit(tc.pod)
		if reason != tc.reason || msg != tc.want {
			t.Errorf("admit = %q %q, want %q %q", reason, msg, tc.reason, tc.want)
		}
	}

	// podvisor validate's warnings, with the default configuration.
	got := NodeWarnings(new(Default()), pod(false, "kernel.shm_rmid_forced", "kernel.msgmax", "vm.max_map_count"))
	want := []string{
		`spec.securityContext.sysctls[1].name: the pod would fail with SysctlForbidden (forbidden sysctl: "kernel.msgmax" not allowlisted): allow it with --allowed-unsafe-sysctls (allowedUnsafeSysctls)`,
		`spec.securityContext.sysctls[2].name: the pod would fail with SysctlForbidden (forbidden sysctl: "vm.max_map_count" not allowlisted): it is not namespaced: it would change the whole node, and no node allows it`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("NodeWarnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSeccompWarnings(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "ok.json"), []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.SeccompProfileRoot = root
	local := func(p string) *v1.SeccompProfile {
		return &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &p}
	}
	yes := true
	pod := &v1.Pod{Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{SeccompProfile: local("missing.json")},
		InitContainers:  []v1.Container{{Name: "init", SecurityContext: &v1.SecurityContext{SeccompProfile: local("ok.json")}}},
		Containers: []v1.Container{
			{Name: "inherits"},
			{Name: "priv", SecurityContext: &v1.SecurityContext{Privileged: &yes}},
			{Name: "own", SecurityContext: &v1.SecurityContext{SeccompProfile: local("sub/gone.json")}},
		},
	}}
	got := seccompWarnings(&c, pod)
	if len(got) != 2 ||
		!strings.HasPrefix(got[0], `spec.securityContext.seccompProfile.localhostProfile: container inherits would wait in CreateContainerError: cannot load seccomp profile "`+filepath.Join(root, "missing.json")+`"`) ||
		!strings.HasPrefix(got[1], `spec.containers[2].securityContext.seccompProfile.localhostProfile: container own would wait in CreateContainerError: cannot load seccomp profile "`+filepath.Join(root, "sub/gone.json")+`"`) {
		t.Errorf("seccompWarnings:\n%s", strings.Join(got, "\n"))
	}
}
