package daemon

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostDomainWarnings(t *testing.T) {
	yes := true
	pod := func(hostname, subdomain string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node-1", Namespace: "default"},
			Spec: v1.PodSpec{Hostname: hostname, Subdomain: subdomain, SetHostnameAsFQDN: &yes}}
	}
	for _, tc := range []struct {
		name, domain string
		pod          *v1.Pod
		want         []string
	}{
		{"no subdomain", "", pod("web", ""), nil},
		{"no cluster domain", "", pod("web", "sub"), []string{"spec.subdomain: no --cluster-domain", "spec.setHostnameAsFQDN: no --cluster-domain"}},
		{"fits", "cluster.local", pod("web", "sub"), nil},
		{"too long", "cluster.local", pod(strings.Repeat("a", 40), "sub"), []string{"spec.setHostnameAsFQDN: the FQDN " + strings.Repeat("a", 40) + ".sub.default.svc.cluster.local is 70 characters"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.ClusterDomain = tc.domain
			got := hostDomainWarnings(&c, tc.pod)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("warning %q, want it to start %q", got[i], tc.want[i])
				}
			}
		})
	}
}
