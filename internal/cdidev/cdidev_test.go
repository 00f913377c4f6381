package cdidev

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

const gpuSpec = `cdiVersion: "0.6.0"
kind: nvidia.com/gpu
devices:
- name: "10"
  containerEdits:
    deviceNodes: [{path: /dev/null}]
- name: "2"
  containerEdits:
    deviceNodes: [{path: /dev/null}]
- name: all
  containerEdits:
    deviceNodes: [{path: /dev/null}]
- name: GPU-abc
  containerEdits:
    env: [GPU=abc]
containerEdits:
  env: [NVIDIA_VISIBLE=1]
  mounts: [{hostPath: /etc/hostname, containerPath: /etc/gpu-host, options: [ro, bind]}]
`

func TestRegistry(t *testing.T) {
	low, high := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(low, "gpu.yaml"), []byte(gpuSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(high, "broken.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := New([]string{low, high, filepath.Join(t.TempDir(), "missing")})

	want := []string{"nvidia.com/gpu=2", "nvidia.com/gpu=10", "nvidia.com/gpu=GPU-abc"}
	if got := r.Devices("nvidia.com/gpu"); !reflect.DeepEqual(got, want) {
		t.Errorf("Devices = %v, want %v (all left out, numbers by value)", got, want)
	}
	if !r.Has("nvidia.com/gpu=all") || r.Has("nvidia.com/gpu=3") {
		t.Errorf("Has: all should exist, 3 should not")
	}
	if got := r.Counts(); !reflect.DeepEqual(got, map[string]int{"nvidia.com/gpu": 3}) {
		t.Errorf("Counts = %v", got)
	}
	if ps := r.Problems(); len(ps) != 1 || !strings.Contains(ps[0], "broken.json") {
		t.Errorf("Problems = %v, want the broken spec", ps)
	}

	s := &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
	if err := r.Inject(s, []string{"nvidia.com/gpu=2"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Process.Env, "NVIDIA_VISIBLE=1") {
		t.Errorf("env %v: the spec's edits are missing", s.Process.Env)
	}
	if len(s.Linux.Devices) != 1 || s.Linux.Devices[0].Path != "/dev/null" || s.Linux.Devices[0].Major != 1 || s.Linux.Devices[0].Minor != 3 {
		t.Errorf("devices %+v, want /dev/null 1:3", s.Linux.Devices)
	}
	if len(s.Mounts) != 1 || s.Mounts[0].Destination != "/etc/gpu-host" {
		t.Errorf("mounts %+v", s.Mounts)
	}
	err := r.Inject(s, []string{"nvidia.com/gpu=7"})
	if err == nil || !strings.Contains(err.Error(), "nvidia.com/gpu=7") || !strings.Contains(err.Error(), low) {
		t.Errorf("unknown device: %v, want an error naming it and the dirs", err)
	}

	// A spec written later is seen at the next question.
	if err := os.WriteFile(filepath.Join(high, "dev.yaml"), []byte("cdiVersion: \"0.6.0\"\nkind: example.com/dev\ndevices:\n- name: \"0\"\n  containerEdits: {env: [A=1]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := r.Devices("example.com/dev"); !reflect.DeepEqual(got, []string{"example.com/dev=0"}) {
		t.Errorf("after a new spec: %v", got)
	}
}

func TestIsKindAndParse(t *testing.T) {
	for name, want := range map[string]bool{"nvidia.com/gpu": true, "nvidia.com/GH100_H800": true, "example.com/": false, "gpu": false, "a/b/c": false} {
		if got := IsKind(name); got != want {
			t.Errorf("IsKind(%q) = %v, want %v", name, got, want)
		}
	}
	if k, err := ParseDevice("nvidia.com/gpu=0"); err != nil || k != "nvidia.com/gpu" {
		t.Errorf("ParseDevice: %q %v", k, err)
	}
	if _, err := ParseDevice("nvidia.com/gpu"); err == nil {
		t.Errorf("ParseDevice without a name: no error")
	}
}
