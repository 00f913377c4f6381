package containerd

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/supervise"
)

// A memory limit is a hard limit wherever the kernel accounts swap: the
// spec's memory+swap limit equals it (v1 memsw = limit, runc writes v2
// swap.max = 0); where swap is not accounted the spec sets no swap, which
// runc would refuse. Both hierarchies are laid out in a temp dir.
func TestSwap(t *testing.T) {
	const cgroupsPath = "/podvisor/podu1/cid"
	for _, tc := range []struct {
		name  string
		files []string // created under the cgroup root
		limit int64
		want  bool // swap = limit in the spec
	}{
		{"v1 with memsw", []string{"memory/memory.memsw.limit_in_bytes", "cpu/cpu.shares"}, 64 << 20, true},
		{"v1 without memsw (swapaccount=0)", []string{"memory/memory.limit_in_bytes", "cpu/cpu.shares"}, 64 << 20, false},
		{"v1 no memory limit", []string{"memory/memory.memsw.limit_in_bytes"}, 0, false},
		{"v2 with swap controller in the pod cgroup", []string{"cgroup.controllers", "podvisor/podu1/memory.swap.max"}, 64 << 20, true},
		{"v2 pod cgroup not made yet: its parent's", []string{"cgroup.controllers", "podvisor/memory.swap.max"}, 64 << 20, true},
		{"v2 without swap controller", []string{"cgroup.controllers", "podvisor/podu1/memory.max"}, 64 << 20, false},
		{"v2 only the root (which never has memory.swap.max)", []string{"cgroup.controllers"}, 64 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost(t)
			for _, f := range tc.files {
				p := filepath.Join(h.cgroupRoot, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := &v1.Container{Name: "c", Command: []string{"true"}}
			opts, err := h.specOpts(supervise.ContainerConfig{
				Pod: &v1.Pod{}, Container: c, CgroupsPath: cgroupsPath,
				Resources: supervise.Resources{CPUShares: 2, MemoryLimit: tc.limit},
			}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			mem := applyOpts(t, opts).Linux.Resources.Memory
			switch {
			case tc.want && (mem == nil || mem.Swap == nil || *mem.Swap != tc.limit):
				t.Errorf("memory %+v, want swap = limit %d", mem, tc.limit)
			case !tc.want && mem != nil && mem.Swap != nil:
				t.Errorf("swap set to %d, want none", *mem.Swap)
			}
		})
	}
}
