package containerd

import (
	"context"
	"errors"
	"strings"
	"testing"

	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	runtimeoptions "github.com/containerd/containerd/api/types/runtimeoptions/v1"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
)

func TestPodRuntime(t *testing.T) {
	r := &Runtime{opts: Options{RuntimeClasses: map[string]RuntimeClass{
		"crun":   {BinaryName: "/usr/bin/crun", Root: "/run/crun-pv"},
		"plain":  {Type: DefaultRuntimeType},
		"gvisor": {Type: "io.containerd.runsc.v1", TypeURL: "io.containerd.runsc.v1.options", ConfigPath: "/etc/containerd/runsc.toml"},
		"kata":   {Type: "io.containerd.kata.v2"},
	}}}
	pod := func(class string) *v1.Pod {
		p := &v1.Pod{}
		if class != "-" {
			p.Spec.RuntimeClassName = &class
		}
		return p
	}
	for _, tc := range []struct {
		class, wantType string
		check           func(o any) bool
	}{
		{"-", DefaultRuntimeType, func(o any) bool { return o == nil }},
		{"", DefaultRuntimeType, func(o any) bool { return o == nil }},
		{"plain", DefaultRuntimeType, func(o any) bool { return o == nil }},
		{"crun", DefaultRuntimeType, func(o any) bool {
			ro, ok := o.(*runcoptions.Options)
			return ok && ro.BinaryName == "/usr/bin/crun" && ro.Root == "/run/crun-pv" && !ro.SystemdCgroup
		}},
		{"gvisor", "io.containerd.runsc.v1", func(o any) bool {
			ro, ok := o.(*runtimeoptions.Options)
			return ok && ro.TypeUrl == "io.containerd.runsc.v1.options" && ro.ConfigPath == "/etc/containerd/runsc.toml"
		}},
		{"kata", "io.containerd.kata.v2", func(o any) bool { return o == nil }},
	} {
		typ, o, err := r.podRuntime(pod(tc.class))
		if err != nil || typ != tc.wantType || !tc.check(o) {
			t.Errorf("class %q: %s %#v %v, want type %s", tc.class, typ, o, err, tc.wantType)
		}
	}
	_, _, err := r.podRuntime(pod("wasm"))
	if !errors.Is(err, ErrNoRuntimeClass) || !strings.Contains(err.Error(), `no runtime for "wasm" is configured`) {
		t.Errorf("unknown class: %v", err)
	}
}

func TestRuntimeClassCheck(t *testing.T) {
	for _, tc := range []struct {
		rc   RuntimeClass
		want string // "" valid
	}{
		{RuntimeClass{}, ""},
		{RuntimeClass{BinaryName: "crun"}, ""},
		{RuntimeClass{BinaryName: "/usr/local/bin/crun", Root: "/run/crun"}, ""},
		{RuntimeClass{Type: "io.containerd.kata.v2", ConfigPath: "/etc/kata/configuration.toml"}, ""},
		{RuntimeClass{Type: "io.containerd.runc.v2", NoPivotRoot: true}, ""},
		{RuntimeClass{BinaryName: "./crun"}, `BinaryName "./crun": want a name looked up in containerd's PATH or an absolute path`},
		{RuntimeClass{Root: "run"}, `Root "run": want an absolute directory`},
		{RuntimeClass{ConfigPath: "/x"}, "TypeUrl and ConfigPath are options of other runtime types"},
		{RuntimeClass{Type: "io.containerd.kata.v2", BinaryName: "kata"}, "are options of io.containerd.runc.v2, not of io.containerd.kata.v2"},
		{RuntimeClass{Type: "io.containerd.kata.v2", ConfigPath: "kata.toml"}, `ConfigPath "kata.toml": want an absolute path`},
		{RuntimeClass{Type: "runc"}, `"runc": not a containerd runtime type`},
		{RuntimeClass{Type: "io.containerd.runc."}, "not a containerd runtime type"},
		{RuntimeClass{Type: ".runc.v2"}, "not a containerd runtime type"},
		{RuntimeClass{Type: "/usr/bin/containerd-shim-runc-v2"}, "not a containerd runtime type"},
	} {
		err := tc.rc.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.rc, err, tc.want)
		}
	}
}

// A class's base spec replaces containerd's default spec, its ociVersion
// included; the options after it apply on top.
func TestRuntimeClassSpecBase(t *testing.T) {
	if opts := (RuntimeClass{}).specBase(); opts != nil {
		t.Errorf("no base spec: %d options", len(opts))
	}
	rc := RuntimeClass{BaseRuntimeSpec: "/etc/base.json", BaseSpec: []byte(`{"ociVersion": "1.0.2-dev", "hostname": "base", "process": {"cwd": "/"}}`)}
	s := &oci.Spec{Version: "1.3.0", Hostname: "default", Process: &specs.Process{Args: []string{"x"}}}
	for _, o := range append(rc.specBase(), oci.WithHostname("pod")) {
		if err := o(context.Background(), nil, &containers.Container{ID: "c"}, s); err != nil {
			t.Fatal(err)
		}
	}
	if s.Version != "1.0.2-dev" || s.Hostname != "pod" || s.Process == nil || s.Process.Args != nil || s.Process.Cwd != "/" {
		t.Errorf("spec %+v, process %+v", s, s.Process)
	}
}
