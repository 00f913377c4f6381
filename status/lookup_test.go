package status

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestFindPods(t *testing.T) {
	pod := func(ns, manifestName string) v1.Pod {
		p := testPod(ns, manifestName+"-node1")
		p.Annotations = map[string]string{ManifestNameAnnotation: manifestName}
		return *p
	}
	pods := []v1.Pod{
		pod("default", "api"),
		pod("default", "web"),
		// Its manifest name is another pod's full name.
		pod("default", "web-node1"),
		pod("kube-system", "api"),
		pod("kube-system", "etcd"),
		*testPod("default", "bare"), // no manifest name
	}
	for _, tc := range []struct {
		name, namespace string
		want            string // namespace/name of each found pod
	}{
		{"web-node1", "", "default/web-node1"}, // the full name wins over a manifest name
		{"web", "", "default/web-node1"},
		{"web-node1-node1", "", "default/web-node1-node1"},
		{"etcd", "", "kube-system/etcd-node1"},
		{"etcd", "kube-system", "kube-system/etcd-node1"},
		{"etcd", "default", ""},
		{"api", "", "default/api-node1 kube-system/api-node1"},
		{"api-node1", "", "default/api-node1 kube-system/api-node1"},
		{"api", "kube-system", "kube-system/api-node1"},
		{"nope", "", ""},
		{"bare", "", "default/bare"},
		{"", "", ""},
	} {
		var got []string
		for _, p := range FindPods(pods, tc.name, tc.namespace) {
			got = append(got, p.Namespace+"/"+p.Name)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("FindPods(%q, %q) = %v, want %q", tc.name, tc.namespace, got, tc.want)
		}
	}
}
