package pressure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name, class string, memReq, diskReq string) *v1.Pod {
	c := v1.Container{Name: "c"}
	if memReq != "" || diskReq != "" {
		c.Resources.Requests = v1.ResourceList{}
	}
	if memReq != "" {
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(memReq)
	}
	if diskReq != "" {
		c.Resources.Requests[v1.ResourceEphemeralStorage] = resource.MustParse(diskReq)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{PriorityClassName: class, Containers: []v1.Container{c}}}
}

func usage(p *v1.Pod, mem, logs uint64) PodUsage {
	return PodUsage{Pod: p, Known: true, Containers: map[string]ContainerUsage{"c": {Memory: mem, Logs: logs}}}
}

func TestRank(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name string
		sig  Signal
		pods []PodUsage
		want string
	}{
		{"memory: over requests first, then priority, then use above requests", MemoryAvailable, []PodUsage{
			usage(pod("guaranteed-under", "", "100Mi", ""), 50*mi, 0),
			usage(pod("critical-over", "system-cluster-critical", "", ""), 10*mi, 0),
			usage(pod("small-over", "", "", ""), 10*mi, 0),
			usage(pod("big-over", "", "10Mi", ""), 200*mi, 0),
			{Pod: pod("no-stats", "system-node-critical", "", ""), Known: false},
		}, "no-stats big-over small-over critical-over guaranteed-under"},
		{"disk: logs against ephemeral-storage requests", NodeFsAvailable, []PodUsage{
			usage(pod("requests-enough", "", "", "1Gi"), 0, 100*mi),
			usage(pod("writer", "", "", ""), 0, 50*mi),
			usage(pod("quiet", "", "", ""), 0, 1*mi),
			usage(pod("memory-hog", "", "", ""), 900*mi, 0),
		}, "writer quiet memory-hog requests-enough"},
		{"disk counts emptyDirs", NodeFsAvailable, []PodUsage{
			usage(pod("logs", "", "", ""), 0, 10*mi),
			{Pod: pod("emptydir", "", "", ""), Known: true, Volumes: map[string]uint64{"data": 20 * mi}},
		}, "emptydir logs"},
		{"pids: priority, then processes", PIDAvailable, []PodUsage{
			{Pod: pod("cp", "system-node-critical", "", ""), Known: true, Containers: map[string]ContainerUsage{"c": {Pids: 900}}},
			{Pod: pod("few", "", "", ""), Known: true, Containers: map[string]ContainerUsage{"c": {Pids: 2}}},
			{Pod: pod("many", "", "", ""), Known: true, Containers: map[string]ContainerUsage{"c": {Pids: 90}}},
		}, "many few cp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Rank(tc.sig, tc.pods)
			var got []string
			for _, p := range tc.pods {
				got = append(got, p.Pod.Name)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got %s, want %s", g, tc.want)
			}
		})
	}
}

func TestEvictable(t *testing.T) {
	high := int32(SystemNodeCriticalPriority)
	for _, tc := range []struct {
		pod  *v1.Pod
		want bool
	}{
		{pod("a", "", "", ""), true},
		{pod("b", "system-cluster-critical", "", ""), true},
		{pod("c", "system-node-critical", "", ""), false},
		{&v1.Pod{Spec: v1.PodSpec{Priority: &high}}, false},
	} {
		if got := Evictable(tc.pod); got != tc.want {
			t.Errorf("Evictable(%s %q) = %v", tc.pod.Name, tc.pod.Spec.PriorityClassName, got)
		}
	}
}

func TestMessage(t *testing.T) {
	ts, _ := ParseStatements("memory.available<100Mi,nodefs.available<10%,pid.available<100")
	p := pod("web", "", "64Mi", "")
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side"})
	u := PodUsage{Pod: p, Known: true, Containers: map[string]ContainerUsage{"c": {Memory: 200 << 20, Logs: 3 << 20}, "side": {Memory: 1 << 20}}}
	for _, tc := range []struct {
		th   Threshold
		obs  Observation
		want string
	}{
		{ts[0], Observation{Available: 90 << 20, Capacity: 1 << 30},
			"The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container c was using 200Mi, request is 64Mi, has larger consumption of memory. Container side was using 1Mi, request is 0, has larger consumption of memory. "},
		{ts[1], Observation{Available: 5 << 20, Capacity: 64 << 20},
			"The node was low on resource: ephemeral-storage. Threshold quantity: 6710886, available: 5Mi. Container c was using 3Mi, request is 0, has larger consumption of ephemeral-storage. "},
		{ts[2], Observation{Available: 50, Capacity: 4096},
			"The node was low on resource: pids. Threshold quantity: 100, available: 50. "},
	} {
		if got := message(tc.th, tc.obs, u); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.th.Signal, got, tc.want)
		}
	}
	if got, want := emptyDirMessage("data", resource.MustParse("1Gi")), `Usage of EmptyDir volume "data" exceeds the limit "1Gi". `; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := containerLimitMessage("c", resource.MustParse("10Mi")), `Container c exceeded its local ephemeral storage limit "10Mi". `; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestObserveMemory(t *testing.T) {
	write := func(t *testing.T, root string, files map[string]string) {
		for name, content := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	meminfo := "MemTotal:        1048576 kB\nMemFree:          262144 kB\nMemAvailable:     700000 kB\n"
	t.Run("v1", func(t *testing.T) {
		cg, proc := t.TempDir(), t.TempDir()
		write(t, proc, map[string]string{"meminfo": meminfo})
		write(t, cg, map[string]string{
			"memory/memory.usage_in_bytes": "805306368\n", // 768Mi
			"memory/memory.stat":           "inactive_file 1\ntotal_inactive_file 268435456\n",
		})
		o, err := Observer{CgroupRoot: cg, ProcRoot: proc}.memory()
		if err != nil {
			t.Fatal(err)
		}
		// 1Gi - (768Mi - 256Mi)
		if o.Capacity != 1<<30 || o.Available != 512<<20 {
			t.Errorf("got %+v, want 512Mi of 1Gi", o)
		}
	})
	t.Run("v2 root from meminfo", func(t *testing.T) {
		cg, proc := t.TempDir(), t.TempDir()
		write(t, proc, map[string]string{"meminfo": meminfo})
		write(t, cg, map[string]string{
			"cgroup.controllers": "cpu memory pids\n",
			"memory.stat":        "anon 1\nfile 2\ninactive_file 134217728\n", // 128Mi
		})
		o, err := Observer{CgroupRoot: cg, ProcRoot: proc}.memory()
		if err != nil {
			t.Fatal(err)
		}
		// used 1Gi-256Mi = 768Mi, working set 640Mi, available 384Mi
		if o.Capacity != 1<<30 || o.Available != 384<<20 {
			t.Errorf("got %+v, want 384Mi of 1Gi", o)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := (Observer{CgroupRoot: t.TempDir(), ProcRoot: t.TempDir()}).memory(); err == nil {
			t.Error("no meminfo, no error")
		}
	})
}
