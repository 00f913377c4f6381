package stats

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
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

// v1Cgroup writes a v1 container cgroup's files under root.
func v1Cgroup(t *testing.T, root, rel string, cpuNanos, used, inactive string) {
	writeFiles(t, root, map[string]string{
		"cpuacct" + rel + "/cpuacct.usage":        cpuNanos + "\n",
		"memory" + rel + "/memory.usage_in_bytes": used + "\n",
		"memory" + rel + "/memory.stat":           "cache 10\nrss 20\ninactive_file 999\ntotal_inactive_file " + inactive + "\ntotal_rss 5\n",
	})
}

func TestCgroupRead(t *testing.T) {
	rel := "/ns/podUID/abc"
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		v1Cgroup(t, root, rel, "2500000000", "10485760", "4194304")
		u, err := NewReader(root).Read(rel)
		if err != nil {
			t.Fatal(err)
		}
		if u.CPUNanos != 2_500_000_000 || u.WorkingSet != 6<<20 {
			t.Errorf("got %+v, want 2.5e9 ns and 6Mi", u)
		}
	})
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{
			"cgroup.controllers":          "cpu memory\n",
			rel[1:] + "/cpu.stat":         "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nnr_periods 0\n",
			rel[1:] + "/memory.current":   "8388608\n",
			rel[1:] + "/memory.stat":      "anon 100\nfile 200\nactive_file 1\ninactive_file 2097152\n",
			"cpuacct" + rel + "/ignored":  "",
			"memory" + rel + "/ignored":   "",
			"unrelated/memory.usage_in_b": "",
		})
		u, err := NewReader(root).Read(rel)
		if err != nil {
			t.Fatal(err)
		}
		if u.CPUNanos != 1_500_000_000 || u.WorkingSet != 6<<20 {
			t.Errorf("got %+v, want 1.5e9 ns and 6Mi", u)
		}
	})
	t.Run("gone", func(t *testing.T) {
		if _, err := NewReader(t.TempDir()).Read(rel); err == nil {
			t.Error("a missing cgroup read without an error")
		}
	})
}

func TestCgroupParsing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		key     string
		want    uint64
		found   bool
		wantErr bool
	}{
		{"present", "a 1\nb 2\n", "b", 2, true, false},
		{"prefix is not the key", "total_inactive_file 7\ninactive_file 3\n", "inactive_file", 3, true, false},
		{"missing", "a 1\n", "b", 0, false, false},
		{"no newline at end", "a 1\nb 22", "b", 22, true, false},
		{"garbage", "b x\n", "b", 0, false, true},
	} {
		got, found, err := statValue([]byte(tc.in), tc.key)
		if got != tc.want || found != tc.found || (err != nil) != tc.wantErr {
			t.Errorf("%s: statValue = %d, %v, %v; want %d, %v, error %v", tc.name, got, found, err, tc.want, tc.found, tc.wantErr)
		}
	}
	if _, err := parseCPUStatV2([]byte("user_usec 3\n")); err == nil {
		t.Error("cpu.stat without usage_usec parsed")
	}
	if got := workingSet(5, 9); got != 0 {
		t.Errorf("workingSet(5, 9) = %d, want 0 (never negative)", got)
	}
}
