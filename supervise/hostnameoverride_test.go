package supervise

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spec.hostnameOverride replaces hostname and subdomain: the pod's
// hostname is the override (cut to 63 characters as kubelet's
// truncatePodHostnameIfNeeded), and it has no host domain, so /etc/hosts
// names no FQDN.
func TestHostnameOverride(t *testing.T) {
	pod := func(override string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node-1", Namespace: "default"},
			Spec: v1.PodSpec{Hostname: "web", Subdomain: "sub", HostnameOverride: &override}}
	}
	for _, tc := range []struct{ override, want string }{
		{"db.example.org", "db.example.org"},
		{strings.Repeat("a", 62) + ".b", strings.Repeat("a", 62)},
	} {
		p := pod(tc.override)
		if got := podHostname(p); got != tc.want {
			t.Errorf("podHostname(%q) = %q, want %q", tc.override, got, tc.want)
		}
		if d := podHostDomain(p, "cluster.local"); d != "" {
			t.Errorf("podHostDomain with override %q = %q, want none", tc.override, d)
		}
		if got, err := kernelHostname(p, "cluster.local"); err != nil || got != tc.want {
			t.Errorf("kernelHostname(%q) = %q, %v; want %q", tc.override, got, err, tc.want)
		}
	}
}
