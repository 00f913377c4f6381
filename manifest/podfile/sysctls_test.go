package podfile

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSafeSysctlsKernelGates(t *testing.T) {
	for _, tc := range []struct {
		release string
		has     []string
		hasNot  []string
	}{
		{"6.1.0-27-amd64", []string{"kernel.shm_rmid_forced", "net.ipv4.tcp_rmem", "net.ipv4.tcp_fin_timeout"}, nil},
		{"4.5.0", []string{"net.ipv4.tcp_keepalive_time", "net.ipv4.ip_local_reserved_ports"}, []string{"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_wmem"}},
		{"3.10.0-1160.el7.x86_64", []string{"net.ipv4.ip_local_port_range"}, []string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time"}},
		// An unreadable release keeps the sysctls that need none.
		{"", []string{"kernel.shm_rmid_forced", "net.ipv4.ping_group_range"}, []string{"net.ipv4.tcp_keepalive_time"}},
	} {
		got := SafeSysctls(tc.release)
		for _, n := range tc.has {
			if !slices.Contains(got, n) {
				t.Errorf("SafeSysctls(%q) lacks %s", tc.release, n)
			}
		}
		for _, n := range tc.hasNot {
			if slices.Contains(got, n) {
				t.Errorf("SafeSysctls(%q) has %s", tc.release, n)
			}
		}
	}
}

func TestNewSysctlAllowlistRefuses(t *testing.T) {
	for _, tc := range []struct {
		pattern, want string
	}{
		{"vm.max_map_count", `the sysctls "vm.max_map_count" are not known to be namespaced`},
		{"kernel.pid_max", `not known to be namespaced`},
		{"kernel.*", `the sysctls "kernel." are not known to be namespaced`},
		{"net.*.foo", `must have at most 253 characters`},
		{"Net.ipv4", `must have at most 253 characters`},
	} {
		_, err := NewSysctlAllowlist([]string{tc.pattern})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSysctlAllowlist(%q) = %v, want an error with %q", tc.pattern, err, tc.want)
		}
	}
	for _, ok := range []string{"kernel.msgmax", "kernel.shm*", "net.*", "fs.mqueue.*", "net/ipv4/ip_forward", "kernel.sem", "user.max_user_namespaces"} {
		if _, err := NewSysctlAllowlist([]string{ok}); err != nil {
			t.Errorf("NewSysctlAllowlist(%q): %v", ok, err)
		}
	}
}

func sysctlPod(hostNet, hostIPC bool, hostUsers *bool, names ...string) *v1.Pod {
	pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, HostUsers: hostUsers, SecurityContext: &v1.PodSecurityContext{}}}
	for _, n := range names {
		pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
	}
	return pod
}

func TestSysctlAllowlistAdmit(t *testing.T) {
	no := false
	safe := SafeSysctls("6.1.0")
	for _, tc := range []struct {
		name    string
		unsafe  []string
		pod     *v1.Pod
		wantErr string
	}{
		{"safe", nil, sysctlPod(false, false, nil, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range"), ""},
		{"safe with slashes", nil, sysctlPod(false, false, nil, "net/ipv4/ip_local_port_range"), ""},
		{"unsafe", nil, sysctlPod(false, false, nil, "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"unsafe allowed", []string{"kernel.msgmax"}, sysctlPod(false, false, nil, "kernel.msgmax"), ""},
		{"unsafe allowed by glob", []string{"kernel.msg*"}, sysctlPod(false, false, nil, "kernel.msgmnb"), ""},
		{"glob is a prefix", []string{"net.ipv4.conf.*"}, sysctlPod(false, false, nil, "net.ipv4.conf.all.forwarding"), ""},
		{"slashes converted before the match", []string{"net.ipv4.conf.*"}, sysctlPod(false, false, nil, "net/ipv4/conf/eth0.100/forwarding"), ""},
		{"not namespaced", nil, sysctlPod(false, false, nil, "vm.max_map_count"), `forbidden sysctl: "vm.max_map_count" not allowlisted`},
		{"net with hostNetwork", nil, sysctlPod(true, false, nil, "net.ipv4.ip_local_port_range"), `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{"ipc with hostIPC", nil, sysctlPod(false, true, nil, "kernel.shm_rmid_forced"), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"ipc glob with hostIPC", []string{"fs.mqueue.*"}, sysctlPod(false, true, nil, "fs.mqueue.msg_max"), `"fs.mqueue.msg_max" not allowed with host IPC enabled`},
		{"net with hostIPC", nil, sysctlPod(false, true, nil, "net.ipv4.tcp_syncookies"), ""},
		{"user with host users", []string{"user.max_user_namespaces"}, sysctlPod(false, false, nil, "user.max_user_namespaces"), `not allowed with host User enabled`},
		{"user in a user namespace", []string{"user.max_user_namespaces"}, sysctlPod(false, false, &no, "user.max_user_namespaces"), ""},
		{"first refused is told", nil, sysctlPod(false, false, nil, "kernel.shm_rmid_forced", "kernel.sem", "vm.swappiness"), `"kernel.sem" not allowlisted`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewSysctlAllowlist(append(slices.Clone(safe), tc.unsafe...))
			if err != nil {
				t.Fatal(err)
			}
			err = a.Admit(tc.pod)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Admit: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Admit = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestIsSafeSysctl(t *testing.T) {
	if !IsSafeSysctl("net/ipv4/tcp_syncookies") || IsSafeSysctl("kernel.msgmax") {
		t.Fatal("IsSafeSysctl")
	}
}
