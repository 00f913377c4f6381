package embedded

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		major   int
		want    []string
		notWant []string
	}{
		{1, []string{"version = 2\n", `root = "/s/containerd"`, `state = "/r/containerd/state"`,
			`"io.containerd.grpc.v1.cri"`, `"io.containerd.snapshotter.v1.zfs"`,
			"[grpc]\n  address = \"/r/containerd/containerd.sock\"", "[ttrpc]\n  address = \"/r/containerd/containerd.sock.ttrpc\"",
			"[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"/s/containerd/opt\""},
			[]string{"io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime"}},
		{2, []string{`"io.containerd.grpc.v1.cri"`, `"io.containerd.cri.v1.images"`, `"io.containerd.cri.v1.runtime"`}, nil},
	}
	for _, tt := range tests {
		cfg := Config("/s/containerd", "/r/containerd/state", "/r/containerd/containerd.sock", "/s/containerd/opt", tt.major)
		for _, w := range tt.want {
			if !strings.Contains(cfg, w) {
				t.Errorf("config for %d.x lacks %q:\n%s", tt.major, w, cfg)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(cfg, w) {
				t.Errorf("config for %d.x has %q:\n%s", tt.major, w, cfg)
			}
		}
	}
}

func TestMajor(t *testing.T) {
	for in, want := range map[string]int{"1.6.20~ds1": 1, "v2.1.4": 2, "2.0.0-rc.1": 2, "v10.0": 10, "": 1, "dev": 1} {
		if got := Major(in); got != want {
			t.Errorf("Major(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestVersion(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v, err := Version(script("ok", `echo "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7"`))
	if err != nil || v != "v2.1.4" {
		t.Errorf("Version = %q, %v; want v2.1.4", v, err)
	}
	if v, err := Version(script("short", "echo containerd")); err == nil {
		t.Errorf("Version of a one-word answer = %q, want an error", v)
	}
	if v, err := Version(script("fails", "exit 1")); err == nil {
		t.Errorf("Version of a failing binary = %q, want an error", v)
	}
}

func TestPrependPath(t *testing.T) {
	got := PrependPath([]string{"A=1", "PATH=/usr/bin:/bin"}, "/build/bin")
	if !slices.Equal(got, []string{"A=1", "PATH=/build/bin:/usr/bin:/bin"}) {
		t.Errorf("PrependPath = %v", got)
	}
	got = PrependPath([]string{"A=1"}, "/build/bin")
	if len(got) != 2 || got[0] != "A=1" || !strings.HasPrefix(got[1], "PATH=/build/bin:") || !strings.Contains(got[1], ":/usr/bin") {
		t.Errorf("PrependPath without PATH = %v", got)
	}
}
