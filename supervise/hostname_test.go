package supervise

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubelet's TestGetNodenameForKernel and TestGeneratePodHostNameAndDomain
// cases, as they apply to a node with or without a cluster domain.
func TestKernelHostname(t *testing.T) {
	pod := func(hostname, subdomain string, fqdn *bool) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node-1", Namespace: "default"},
			Spec: v1.PodSpec{Hostname: hostname, Subdomain: subdomain, SetHostnameAsFQDN: fqdn}}
	}
	yes, no := true, false
	long := strings.Repeat("a", 40)
	for _, tc := range []struct {
		name          string
		pod           *v1.Pod
		clusterDomain string
		domain, want  string
		err           string
	}{
		{name: "pod name", pod: pod("", "", nil), clusterDomain: "cluster.local", want: "web-node-1"},
		{name: "hostname, no subdomain", pod: pod("web", "", &yes), clusterDomain: "cluster.local", want: "web"},
		{name: "subdomain, FQDN not asked", pod: pod("web", "sub", &no), clusterDomain: "cluster.local", domain: "sub.default.svc.cluster.local", want: "web"},
		{name: "subdomain, FQDN unset", pod: pod("web", "sub", nil), clusterDomain: "cluster.local", domain: "sub.default.svc.cluster.local", want: "web"},
		{name: "FQDN", pod: pod("web", "sub", &yes), clusterDomain: "cluster.local", domain: "sub.default.svc.cluster.local", want: "web.sub.default.svc.cluster.local"},
		{name: "FQDN of the pod name", pod: pod("", "sub", &yes), clusterDomain: "c.test", domain: "sub.default.svc.c.test", want: "web-node-1.sub.default.svc.c.test"},
		{name: "no cluster domain: short", pod: pod("web", "sub", &yes), want: "web"},
		{name: "FQDN of 64 characters", pod: pod(strings.Repeat("a", 33), "sub", &yes), clusterDomain: "cluster.local", domain: "sub.default.svc.cluster.local",
			want: strings.Repeat("a", 33) + ".sub.default.svc.cluster.local"},
		{name: "FQDN too long", pod: pod(long, "sub", &yes), clusterDomain: "cluster.local", domain: "sub.default.svc.cluster.local",
			err: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + long + ".sub.default.svc.cluster.local is too long (64 characters is the max, 70 characters requested)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := podHostDomain(tc.pod, tc.clusterDomain); d != tc.domain {
				t.Errorf("domain %q, want %q", d, tc.domain)
			}
			got, err := kernelHostname(tc.pod, tc.clusterDomain)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("hostname %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}
