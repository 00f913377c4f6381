package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCDIWarnings(t *testing.T) {
	dir := t.TempDir()
	spec := "cdiVersion: \"0.6.0\"\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits: {env: [A=1]}\n- name: all\n  containerEdits: {env: [A=1]}\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := func(res string, n int64, ann map[string]string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: ann}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
		if res != "" {
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceName(res): *resource.NewQuantity(n, resource.DecimalSI)}
		}
		return p
	}
	c := Default()
	c.CDISpecDirs = dir
	for _, tc := range []struct {
		name string
		c    Config
		pod  *v1.Pod
		want string
	}{
		{"provided", c, pod("nvidia.com/gpu", 1, nil), ""},
		{"too few", c, pod("nvidia.com/gpu", 2, nil), "spec.containers[0].resources.limits[nvidia.com/gpu]: the pod asks for 2 devices of kind nvidia.com/gpu and the CDI specs in " + dir + " define 1"},
		{"no such kind", c, pod("example.com/dev", 1, nil), "spec.containers[0].resources.limits[example.com/dev]: no CDI spec in " + dir + " defines devices of kind example.com/dev on this node: the pod would be rejected (OutOfexample.com/dev)"},
		{"annotation", c, pod("", 0, map[string]string{"cdi.k8s.io/x": "nvidia.com/gpu=all"}), ""},
		{"annotation unknown", c, pod("", 0, map[string]string{"cdi.k8s.io/x": "nvidia.com/gpu=7"}), "metadata.annotations[cdi.k8s.io/x]: CDI device nvidia.com/gpu=7: no CDI spec in " + dir},
		{"no dirs", Config{}, pod("nvidia.com/gpu", 1, nil), "no CDI spec dir is configured (--cdi-spec-dirs)"},
		{"nothing asked", c, pod("", 0, nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(cdiWarnings(&tc.c, tc.pod), "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("warnings:\n%s\nwant: %q", got, tc.want)
			}
		})
	}
}

func TestCDICapacity(t *testing.T) {
	dir := t.TempDir()
	spec := "cdiVersion: \"0.6.0\"\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits: {env: [A=1]}\n- name: \"1\"\n  containerEdits: {env: [A=1]}\n- name: all\n  containerEdits: {env: [A=1]}\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.CDISpecDirs = dir
	got := cdiCapacity(c.cdiRegistry())()
	if q := got["nvidia.com/gpu"]; len(got) != 1 || q.Value() != 2 {
		t.Errorf("capacity %v, want nvidia.com/gpu: 2", got)
	}
	c.CDISpecDirs = ""
	if cdiCapacity(c.cdiRegistry()) != nil {
		t.Errorf("no dirs: want no capacity function")
	}
}

func TestCDISpecDirsFlag(t *testing.T) {
	c := Default()
	if got := c.cdiSpecDirs(); strings.Join(got, ",") != "/etc/cdi,/var/run/cdi" {
		t.Errorf("default dirs %v", got)
	}
	c.CDISpecDirs = "/a, relative"
	if err := checkCDISpecDirs(&c); err == nil || !strings.Contains(err.Error(), `"relative"`) {
		t.Errorf("relative dir: %v", err)
	}
	c.CDISpecDirs = ""
	if c.cdiRegistry() != nil {
		t.Errorf(`"" should give no registry`)
	}
}
