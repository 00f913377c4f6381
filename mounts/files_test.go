package mounts

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const managedBoilerplate = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestHostsFile(t *testing.T) {
	aliases := []v1.HostAlias{
		{IP: "127.0.0.1", Hostnames: []string{"foo.local", "bar.local"}},
		{IP: "10.1.2.3", Hostnames: []string{"foo.remote"}},
	}
	const aliasSection = "\n# Entries added by HostAliases.\n" +
		"127.0.0.1\tfoo.local\tbar.local\n10.1.2.3\tfoo.remote\n"
	hostHosts := []byte("127.0.0.1 localhost\n192.0.2.2 node1\n")

	tests := []struct {
		name        string
		hostname    string
		podIPs      []string
		aliases     []v1.HostAlias
		hostNetwork bool
		want        string
	}{
		{
			name: "no IP yet", hostname: "web",
			want: managedBoilerplate,
		},
		{
			name: "one IP", hostname: "web", podIPs: []string{"10.88.0.5"},
			want: managedBoilerplate + "10.88.0.5\tweb\n",
		},
		{
			name: "dual stack with aliases", hostname: "web", podIPs: []string{"10.88.0.5", "fd00::5"}, aliases: aliases,
			want: managedBoilerplate + "10.88.0.5\tweb\nfd00::5\tweb\n" + aliasSection,
		},
		{
			name: "host network", hostname: "node1", podIPs: []string{"192.0.2.2"}, hostNetwork: true,
			want: "# Kubernetes-managed hosts file (host network).\n" + string(hostHosts),
		},
		{
			name: "host network with aliases", hostname: "node1", hostNetwork: true, aliases: aliases,
			want: "# Kubernetes-managed hosts file (host network).\n" + string(hostHosts) + aliasSection,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(HostsFile(tt.hostname, tt.podIPs, tt.aliases, tt.hostNetwork, hostHosts))
			if got != tt.want {
				t.Errorf("HostsFile =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestResolvConf(t *testing.T) {
	const host = "# generated\nnameserver 192.0.2.53\nnameserver 127.0.0.53\nsearch old.example\nsearch corp.example. lab.example\noptions edns0 ndots:2\n"
	str := func(s string) *string { return &s }
	pod := func(policy v1.DNSPolicy, hostNet bool, dc *v1.PodDNSConfig) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: dc}}
	}
	manySearches := make([]string, 40)
	for i := range manySearches {
		manySearches[i] = fmt.Sprintf("s%d.example", i)
	}

	tests := []struct {
		name      string
		pod       *v1.Pod
		host      string
		want      string
		warnings  []string // substrings, one per expected warning, in order
		wantError bool
	}{
		{
			name: "ClusterFirst falls back to host and drops loopback",
			pod:  pod(v1.DNSClusterFirst, false, nil), host: host,
			want:     "search corp.example lab.example\nnameserver 192.0.2.53\noptions edns0 ndots:2\n",
			warnings: []string{"no cluster DNS; using host resolv.conf", "dropped loopback nameserver 127.0.0.53"},
		},
		{
			name: "empty policy is ClusterFirst",
			pod:  pod("", false, nil), host: "nameserver 192.0.2.53\n",
			want:     "nameserver 192.0.2.53\n",
			warnings: []string{"no cluster DNS"},
		},
		{
			name: "ClusterFirst on host network is Default, loopback kept",
			pod:  pod(v1.DNSClusterFirst, true, nil), host: host,
			want: "search corp.example lab.example\nnameserver 192.0.2.53\nnameserver 127.0.0.53\noptions edns0 ndots:2\n",
		},
		{
			name: "ClusterFirstWithHostNet warns",
			pod:  pod(v1.DNSClusterFirstWithHostNet, true, nil), host: host,
			want:     "search corp.example lab.example\nnameserver 192.0.2.53\nnameserver 127.0.0.53\noptions edns0 ndots:2\n",
			warnings: []string{"no cluster DNS; using host resolv.conf"},
		},
		{
			name: "Default drops loopback on pod network",
			pod:  pod(v1.DNSDefault, false, nil), host: "nameserver 127.0.0.1\nnameserver ::1\nnameserver 192.0.2.53\n",
			want:     "nameserver 192.0.2.53\n",
			warnings: []string{"127.0.0.1", "::1"},
		},
		{
			name: "only loopback leaves no DNS",
			pod:  pod(v1.DNSDefault, false, nil), host: "nameserver 127.0.0.53\n",
			want:     "",
			warnings: []string{"127.0.0.53", "no usable nameserver"},
		},
		{
			name: "None uses dnsConfig only",
			pod: pod(v1.DNSNone, false, &v1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "127.0.0.1"},
				Searches:    []string{"a.example"},
				Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: str("1")}, {Name: "rotate"}},
			}), host: host,
			want: "search a.example\nnameserver 1.1.1.1\nnameserver 127.0.0.1\noptions ndots:1 rotate\n",
		},
		{
			name: "None without nameservers",
			pod:  pod(v1.DNSNone, false, &v1.PodDNSConfig{Searches: []string{"a"}}), host: host,
			wantError: true,
		},
		{
			name:      "invalid policy",
			pod:       pod("Sometimes", false, nil),
			wantError: true,
		},
		{
			name: "dnsConfig merges with host",
			pod: pod(v1.DNSDefault, true, &v1.PodDNSConfig{
				Nameservers: []string{"192.0.2.53", "198.51.100.1"},
				Searches:    []string{"lab.example", "new.example"},
				Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: str("5")}, {Name: "edns0"}, {Name: "timeout", Value: str("2")}},
			}), host: "nameserver 192.0.2.53\nsearch corp.example lab.example\noptions edns0 ndots:2 attempts:3\n",
			want: "search corp.example lab.example new.example\nnameserver 192.0.2.53\nnameserver 198.51.100.1\noptions edns0 ndots:5 attempts:3 timeout:2\n",
		},
		{
			name: "at most 3 nameservers",
			pod:  pod(v1.DNSDefault, true, &v1.PodDNSConfig{Nameservers: []string{"10.0.0.3", "10.0.0.4"}}), host: "nameserver 10.0.0.1\nnameserver 10.0.0.2\n",
			want:     "nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n",
			warnings: []string{"nameserver limits were exceeded"},
		},
		{
			name:     "at most 32 searches",
			pod:      pod(v1.DNSNone, false, &v1.PodDNSConfig{Nameservers: []string{"10.0.0.1"}, Searches: manySearches}),
			want:     "search " + strings.Join(manySearches[:32], " ") + "\nnameserver 10.0.0.1\n",
			warnings: []string{"search line limits were exceeded"},
		},
		{
			name:     "over-long search domain dropped",
			pod:      pod(v1.DNSNone, false, &v1.PodDNSConfig{Nameservers: []string{"10.0.0.1"}, Searches: []string{strings.Repeat("a", 254), "ok.example"}}),
			want:     "search ok.example\nnameserver 10.0.0.1\n",
			warnings: []string{"search line limits were exceeded"},
		},
		{
			name: "missing host file",
			pod:  pod(v1.DNSDefault, false, nil), host: "",
			want:     "",
			warnings: []string{"no usable nameserver"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := ResolvConf(tt.pod, []byte(tt.host))
			if tt.wantError {
				if err == nil {
					t.Fatalf("ResolvConf = %q, want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("ResolvConf =\n%s\nwant\n%s", got, tt.want)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d matching %q", warnings, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestSearchLineCharLimit(t *testing.T) {
	var long []string
	for i := range 30 {
		long = append(long, fmt.Sprintf("%s-%02d.example", strings.Repeat("x", 90), i))
	}
	got, cut := fitSearches(long)
	if !cut || len(strings.Join(got, " ")) > maxDNSSearchListChars || !slices.Equal(got, long[:len(got)]) {
		t.Errorf("fitSearches kept %d domains (%d chars), cut=%v; want a prefix within %d chars", len(got), len(strings.Join(got, " ")), cut, maxDNSSearchListChars)
	}
}
