package containerd

import (
	"errors"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/supervise"
)

func TestSpecMountPropagation(t *testing.T) {
	// The mounts holding each source, as mountinfo shows them.
	holders := map[string]*mountinfo.Info{
		"/shared":  {Mountpoint: "/shared", Optional: "shared:7"},
		"/slave":   {Mountpoint: "/slave", Optional: "master:3"},
		"/both":    {Mountpoint: "/both", Optional: "shared:9 master:3"},
		"/private": {Mountpoint: "/", Optional: ""},
	}
	lookup := func(p string) (*mountinfo.Info, error) {
		if m, ok := holders[p]; ok {
			return m, nil
		}
		return nil, errors.New("no such path")
	}
	bind := func(src, prop string) specs.Mount {
		return specs.Mount{Destination: "/mnt" + src, Type: "bind", Source: src, Options: []string{"rbind", prop, "rw"}}
	}
	for _, tc := range []struct {
		name     string
		mounts   []specs.Mount
		wantRoot string
		wantErr  string
	}{
		{name: "None", mounts: []specs.Mount{bind("/private", "rprivate")}},
		{name: "HostToContainer shared source", mounts: []specs.Mount{bind("/shared", "rslave")}, wantRoot: "rslave"},
		{name: "HostToContainer slave source", mounts: []specs.Mount{bind("/slave", "rslave")}, wantRoot: "rslave"},
		{name: "HostToContainer private source", mounts: []specs.Mount{bind("/private", "rslave")},
			wantErr: `path "/private" is mounted on "/" but it is not a shared or slave mount`},
		{name: "Bidirectional shared source", mounts: []specs.Mount{bind("/shared", "rshared")}, wantRoot: "rshared"},
		{name: "Bidirectional shared slave source", mounts: []specs.Mount{bind("/both", "rshared")}, wantRoot: "rshared"},
		{name: "Bidirectional slave source", mounts: []specs.Mount{bind("/slave", "rshared")},
			wantErr: `path "/slave" is mounted on "/slave" but it is not a shared mount`},
		{name: "Bidirectional private source", mounts: []specs.Mount{bind("/private", "rshared")},
			wantErr: `path "/private" is mounted on "/" but it is not a shared mount`},
		{name: "rshared wins after", mounts: []specs.Mount{bind("/shared", "rslave"), bind("/both", "rshared")}, wantRoot: "rshared"},
		{name: "rshared wins before", mounts: []specs.Mount{bind("/both", "rshared"), bind("/shared", "rslave")}, wantRoot: "rshared"},
		{name: "lookup fails", mounts: []specs.Mount{bind("/gone", "rslave")}, wantErr: "no such path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost(t)
			h.lookupMount = lookup
			pod := &v1.Pod{}
			c := &v1.Container{Name: "c", Command: []string{"/bin/true"}}
			opts, err := h.specOpts(supervise.ContainerConfig{Pod: pod, Container: c, SandboxID: "sb", Mounts: tc.mounts}, nil, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := applyOpts(t, opts)
			if got := s.Linux.RootfsPropagation; got != tc.wantRoot {
				t.Errorf("RootfsPropagation = %q, want %q", got, tc.wantRoot)
			}
			for _, want := range tc.mounts {
				found := false
				for _, m := range s.Mounts {
					if m.Destination == want.Destination {
						found = true
						if strings.Join(m.Options, ",") != strings.Join(want.Options, ",") {
							t.Errorf("mount %s options = %v, want %v", m.Destination, m.Options, want.Options)
						}
					}
				}
				if !found {
					t.Errorf("no mount at %s in %v", want.Destination, s.Mounts)
				}
			}
		})
	}
}

func TestLookupMount(t *testing.T) {
	// /proc/self/fd is beneath the proc mount at /proc (symlink resolved).
	m, err := lookupMount("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	if m.Mountpoint != "/proc" || m.FSType != "proc" {
		t.Errorf("lookupMount(/proc/self/fd) = %s (%s), want /proc (proc)", m.Mountpoint, m.FSType)
	}
	if _, err := lookupMount("/does/not/exist"); err == nil {
		t.Error("lookupMount of a missing path succeeded")
	}
}
