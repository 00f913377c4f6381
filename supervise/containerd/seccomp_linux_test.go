package containerd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
)

func TestSeccompOpts(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(filepath.Join(root, "profiles", "deny.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	local := func(p string) *v1.SeccompProfile {
		return &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &p}
	}
	for _, tc := range []struct {
		name       string
		p          *v1.SeccompProfile
		privileged bool
		want       specs.LinuxSeccompAction // "" no profile
		wantErr    string
	}{
		{"none", nil, false, "", ""},
		{"unconfined", &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}, false, "", ""},
		{"runtime default", &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}, false, specs.ActErrno, ""},
		{"localhost", local("profiles/deny.json"), false, specs.ActAllow, ""},
		{"localhost privileged", local("profiles/deny.json"), true, "", ""},
		{"localhost missing", local("profiles/nope.json"), false, "", `cannot load seccomp profile "` + filepath.Join(root, "profiles/nope.json") + `"`},
		{"localhost not JSON", local("profiles"), false, "", `cannot load seccomp profile`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := seccompOpts(tc.p, tc.privileged, root)
			if err != nil {
				t.Fatal(err)
			}
			s, err := tryOpts(t, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && s.Linux.Seccomp != nil:
				t.Fatalf("seccomp = %+v, want none", s.Linux.Seccomp)
			case tc.want != "" && (s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != tc.want):
				t.Fatalf("seccomp = %+v, want default action %s", s.Linux.Seccomp, tc.want)
			}
			if tc.name == "localhost" && (len(s.Linux.Seccomp.Syscalls) != 1 || s.Linux.Seccomp.Syscalls[0].Names[0] != "mkdir") {
				t.Fatalf("syscalls = %+v", s.Linux.Seccomp.Syscalls)
			}
		})
	}
}
