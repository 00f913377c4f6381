package supervise

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func res(req, lim map[v1.ResourceName]string) v1.ResourceRequirements {
	conv := func(m map[v1.ResourceName]string) v1.ResourceList {
		if m == nil {
			return nil
		}
		l := v1.ResourceList{}
		for k, v := range m {
			l[k] = resource.MustParse(v)
		}
		return l
	}
	return v1.ResourceRequirements{Requests: conv(req), Limits: conv(lim)}
}

// The expected numbers are those of kubelet's helpers_linux_test.go
// (TestMilliCPUToQuota, TestMilliCPUToShares) and runc's shares→weight.
func TestCPUConversions(t *testing.T) {
	for _, tc := range []struct {
		milli  int64
		shares uint64
		quota  int64
	}{
		{0, 2, 0},
		{1, 2, 1000},
		{5, 5, 1000},
		{9, 9, 1000},
		{10, 10, 1000},
		{200, 204, 20000},
		{250, 256, 25000},
		{1000, 1024, 100000},
		{1500, 1536, 150000},
	} {
		if got := cpuShares(tc.milli); got != tc.shares {
			t.Errorf("cpuShares(%d) = %d, want %d", tc.milli, got, tc.shares)
		}
		if got := cpuQuota(tc.milli); got != tc.quota {
			t.Errorf("cpuQuota(%d) = %d, want %d", tc.milli, got, tc.quota)
		}
	}
	for shares, weight := range map[uint64]uint64{2: 1, 1024: 39, 262144: 10000, 256: 10} {
		if got := sharesToWeight(shares); got != weight {
			t.Errorf("sharesToWeight(%d) = %d, want %d", shares, got, weight)
		}
	}
}

func TestCgroupFilesV1V2(t *testing.T) {
	c := &v1.Container{Resources: res(nil, map[v1.ResourceName]string{"cpu": "250m", "memory": "64Mi"})}
	r := containerResources(c)
	if r != (Resources{CPUShares: 256, CPUQuota: 25000, CPUPeriod: quotaPeriod, MemoryLimit: 64 << 20}) {
		t.Fatalf("containerResources = %+v", r)
	}
	wantV1 := []cgroupFile{
		{"cpu", "cpu.shares", "256"},
		{"cpu", "cpu.cfs_period_us", "100000"},
		{"cpu", "cpu.cfs_quota_us", "25000"},
		{"memory", "memory.limit_in_bytes", "67108864"},
	}
	if got := cgroupFiles(false, r, 0); !reflect.DeepEqual(got, wantV1) {
		t.Errorf("v1 files = %v, want %v", got, wantV1)
	}
	wantV2 := []cgroupFile{
		{"", "cpu.weight", "10"},
		{"", "cpu.max", "25000 100000"},
		{"", "memory.max", "67108864"},
	}
	if got := cgroupFiles(true, r, 0); !reflect.DeepEqual(got, wantV2) {
		t.Errorf("v2 files = %v, want %v", got, wantV2)
	}
	unlimited := cgroupFiles(true, Resources{CPUShares: 2}, -1)
	if unlimited[1].Value != "max 100000" || unlimited[2].Value != "max" {
		t.Errorf("unlimited v2 = %v", unlimited)
	}
	unlimitedV1 := cgroupFiles(false, Resources{CPUShares: 2}, -1)
	if unlimitedV1[2].Value != "-1" || unlimitedV1[3].Value != "-1" {
		t.Errorf("unlimited v1 = %v", unlimitedV1)
	}
}

// TestCgroupPidsLimit: --pod-pids-limit becomes pids.max in the v1 pids
// hierarchy or the v2 pod cgroup, with the pids controller enabled on v2;
// none (-1, 0) writes no pids file.
func TestCgroupPidsLimit(t *testing.T) {
	r := Resources{CPUShares: 2}
	v1files := cgroupFiles(false, r, 64)
	if last := v1files[len(v1files)-1]; last != (cgroupFile{"pids", "pids.max", "64"}) {
		t.Errorf("v1 pids file = %v", last)
	}
	v2files := cgroupFiles(true, r, 4096)
	if last := v2files[len(v2files)-1]; last != (cgroupFile{"", "pids.max", "4096"}) {
		t.Errorf("v2 pids file = %v", last)
	}
	for _, none := range []int64{-1, 0} {
		for _, v2 := range []bool{false, true} {
			for _, f := range cgroupFiles(v2, r, none) {
				if f.Name == "pids.max" {
					t.Errorf("limit %d (none) wrote %v", none, f)
				}
			}
		}
	}

	// v2 layout: controllers enabled along the path, pids.max in the pod's.
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids"), 0o644)
	if err := detectCgroups(root, 64).apply("podvisor/podabc", r); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "podvisor/podabc/pids.max")); err != nil || string(b) != "64" {
		t.Fatalf("v2 pids.max = %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "podvisor/cgroup.subtree_control")); string(b) != "+cpu +memory +pids" {
		t.Fatalf("pids controller not enabled on parent: %q", b)
	}

	// v1 layout: pids.max in the pids hierarchy; without one, an error.
	root = t.TempDir()
	for _, c := range []string{"cpu", "memory", "pids"} {
		os.Mkdir(filepath.Join(root, c), 0o755)
	}
	if err := detectCgroups(root, 64).apply("podvisor/podabc", r); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "pids/podvisor/podabc/pids.max")); err != nil || string(b) != "64" {
		t.Fatalf("v1 pids.max = %q, %v", b, err)
	}
	os.RemoveAll(filepath.Join(root, "pids"))
	err := detectCgroups(root, 64).apply("podvisor/podxyz", r)
	if err == nil || !strings.Contains(err.Error(), "pids hierarchy") {
		t.Fatalf("v1 without pids hierarchy: %v", err)
	}
	if err := detectCgroups(root, -1).apply("podvisor/podxyz", r); err != nil {
		t.Fatalf("no limit, no pids hierarchy: %v", err)
	}
}

func TestPodResources(t *testing.T) {
	spec := &v1.PodSpec{Containers: []v1.Container{
		{Resources: res(map[v1.ResourceName]string{"cpu": "100m"}, map[v1.ResourceName]string{"cpu": "200m", "memory": "10Mi"})},
		{Resources: res(nil, map[v1.ResourceName]string{"cpu": "300m", "memory": "20Mi"})},
	}}
	got := podResources(spec)
	want := Resources{CPUShares: cpuShares(400), CPUQuota: cpuQuota(500), CPUPeriod: quotaPeriod, MemoryLimit: 30 << 20}
	if got != want {
		t.Errorf("podResources = %+v, want %+v", got, want)
	}
	// One container without limits: the pod is not limited (Burstable).
	spec.Containers = append(spec.Containers, v1.Container{})
	got = podResources(spec)
	if got.CPUQuota != 0 || got.MemoryLimit != 0 {
		t.Errorf("partly limited pod got limits %+v", got)
	}
}

func TestCgroupApplyRemoveV2Layout(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory"), 0o644)
	cg := detectCgroups(root, 0)
	if !cg.v2 {
		t.Fatal("not detected as v2")
	}
	if err := cg.apply("podvisor/podabc", Resources{CPUShares: 1024, CPUQuota: 50000, MemoryLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "podvisor/podabc/cpu.max"))
	if err != nil || string(b) != "50000 100000" {
		t.Fatalf("cpu.max = %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "podvisor/cgroup.subtree_control")); string(b) != "+cpu +memory" {
		t.Fatalf("controllers not enabled on parent: %q", b)
	}
	// A real cgroupfs holds no regular files we must delete; the tmpdir does,
	// so only check that a missing cgroup is not an error.
	if err := cg.remove("podvisor/missing"); err != nil {
		t.Fatal(err)
	}
}

func TestOOMKills(t *testing.T) {
	root := t.TempDir()
	v1 := cgroups{root: root}
	os.MkdirAll(filepath.Join(root, "memory", "p", "c"), 0o755)
	os.WriteFile(filepath.Join(root, "memory", "p", "c", "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644)
	if n := v1.oomKills("p/c"); n != 2 {
		t.Errorf("v1 oom kills = %d, want 2", n)
	}
	v2 := cgroups{root: root, v2: true}
	os.MkdirAll(filepath.Join(root, "p", "c"), 0o755)
	os.WriteFile(filepath.Join(root, "p", "c", "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644)
	if n := v2.oomKills("p/c"); n != 1 {
		t.Errorf("v2 oom kills = %d, want 1", n)
	}
	if n := v2.oomKills("missing"); n != 0 {
		t.Errorf("missing cgroup = %d", n)
	}
}
