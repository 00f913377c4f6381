package mounts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With a domain, /etc/hosts names the pod's IPs as kubelet's
// managedHostsFileContent does ("<ip>\t<hostname>.<domain>\t<hostname>")
// and /etc/hostname holds the FQDN only with setHostnameAsFQDN.
func TestSetupHostDomain(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name, domain string
		fqdn         *bool
		hostsLine    string
		hostname     string
	}{
		{name: "no domain", fqdn: &yes, hostsLine: "10.0.0.5\tweb\n", hostname: "web\n"},
		{name: "domain", domain: "sub.ns.svc.cluster.local", hostsLine: "10.0.0.5\tweb.sub.ns.svc.cluster.local\tweb\n", hostname: "web\n"},
		{name: "domain and FQDN", domain: "sub.ns.svc.cluster.local", fqdn: &yes, hostsLine: "10.0.0.5\tweb.sub.ns.svc.cluster.local\tweb\n", hostname: "web.sub.ns.svc.cluster.local\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			resolv := filepath.Join(dir, "resolv.conf")
			if err := os.WriteFile(resolv, []byte("nameserver 10.0.0.1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			spec := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
				Spec: v1.PodSpec{Hostname: "web", Subdomain: "sub", SetHostnameAsFQDN: tc.fqdn, DNSPolicy: v1.DNSDefault}}
			p := Pod{Spec: spec, Dir: filepath.Join(dir, "files"), Hostname: "web", HostDomain: tc.domain, PodIPs: []string{"10.0.0.5"}, HostResolvConf: resolv}
			if err := Setup(p); err != nil {
				t.Fatal(err)
			}
			hosts, err := os.ReadFile(filepath.Join(p.Dir, hostsFile))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(hosts), tc.hostsLine) {
				t.Errorf("hosts file %q, want it to end with %q", hosts, tc.hostsLine)
			}
			name, err := os.ReadFile(filepath.Join(p.Dir, hostnameFile))
			if err != nil || string(name) != tc.hostname {
				t.Errorf("hostname file %q (%v), want %q", name, err, tc.hostname)
			}
		})
	}
}
