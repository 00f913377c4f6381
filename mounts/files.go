package mounts

import (
	"bytes"
	"fmt"
	"net"
	"strings"

	v1 "k8s.io/api/core/v1"
)

const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// DNS limits, as in k8s.io/kubernetes/pkg/apis/core/validation (the
// "expanded" search limits, the default since Kubernetes 1.28).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchPathLen   = 253 // DNS-1123 subdomain
)

// HostsFile renders a pod's /etc/hosts as kubelet does. A pod on the pod
// network gets the managed file: localhost and the IPv6 boilerplate, one
// "<ip>\t<hostname>" line per pod IP, then the hostAliases section (a
// "<ip>\t<hostname>\t<hostname>..." line per alias). A
// hostNetwork pod gets the host's hosts file (hostHosts) under kubelet's
// host-network header, then the hostAliases section.
func HostsFile(hostname string, podIPs []string, aliases []v1.HostAlias, hostNetwork bool, hostHosts []byte) []byte {
	var b bytes.Buffer
	if hostNetwork {
		b.WriteString(managedHostsHeaderHostNetwork)
		b.Write(hostHosts)
	} else {
		b.WriteString(managedHostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	if len(aliases) > 0 {
		// One line per alias, its hostnames tab-separated, as kubelet's
		// hostsEntriesFromHostAliases writes them (very old kubelets wrote
		// a line per hostname).
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range aliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// ResolvConf renders a pod's /etc/resolv.conf from its dnsPolicy and
// dnsConfig and the host's resolv.conf, following kubelet's
// pkg/kubelet/network/dns, and returns warnings for what it had to change
// (kubelet records those as DNSConfigForming / MissingClusterDNS events).
//
//   - podvisor has no cluster DNS, so ClusterFirst (on the pod network) and
//     ClusterFirstWithHostNet fall back to the host's resolv.conf, as kubelet
//     does without --cluster-dns, with a warning. ClusterFirst on the host
//     network and Default use the host's file; None starts empty and
//     requires dnsConfig.nameservers.
//   - dnsConfig nameservers and searches are appended without duplicates;
//     its options override host options of the same name.
//   - At most 3 nameservers and 32 search domains (2048 characters, none
//     longer than 253) are kept.
//   - Loopback nameservers (127.0.0.0/8, ::1) taken from the host are
//     unreachable from a pod's network namespace and are dropped, with a
//     warning, for pods not on the host network. kubelet leaves this to the
//     host: on systemd-resolved hosts, point podvisor at
//     /run/systemd/resolve/resolv.conf (the upstream servers) instead of the
//     127.0.0.53 stub file. Loopback servers set in dnsConfig are kept: the
//     pod may run its own resolver.
func ResolvConf(pod *v1.Pod, hostResolv []byte) ([]byte, []string, error) {
	if pod == nil {
		return nil, nil, fmt.Errorf("resolv.conf: no pod")
	}
	hostNetwork := pod.Spec.HostNetwork
	host := parseResolvConf(hostResolv)
	var warnings []string

	var servers, searches, options []string
	useHost := false
	switch policy := pod.Spec.DNSPolicy; policy {
	case v1.DNSNone:
		if pod.Spec.DNSConfig == nil || len(pod.Spec.DNSConfig.Nameservers) == 0 {
			return nil, nil, fmt.Errorf("resolv.conf: dnsPolicy None requires dnsConfig.nameservers")
		}
	case v1.DNSClusterFirst, "":
		if hostNetwork {
			useHost = true
			break
		}
		fallthrough
	case v1.DNSClusterFirstWithHostNet:
		warnings = append(warnings, fmt.Sprintf("no cluster DNS; using host resolv.conf (dnsPolicy %s falls back to %s)", orDefault(policy, v1.DNSClusterFirst), v1.DNSDefault))
		useHost = true
	case v1.DNSDefault:
		useHost = true
	default:
		return nil, nil, fmt.Errorf("resolv.conf: invalid dnsPolicy %q", policy)
	}
	if useHost {
		searches, options = host.searches, host.options
		for _, ns := range host.nameservers {
			if !hostNetwork && isLoopback(ns) {
				warnings = append(warnings, fmt.Sprintf("dropped loopback nameserver %s from host resolv.conf: unreachable from the pod network namespace", ns))
				continue
			}
			servers = append(servers, ns)
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		servers = omitDuplicates(append(servers, dc.Nameservers...))
		searches = omitDuplicates(append(searches, dc.Searches...))
		options = mergeOptions(options, dc.Options)
	}

	if len(servers) > maxDNSNameservers {
		servers = servers[:maxDNSNameservers]
		warnings = append(warnings, fmt.Sprintf("nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(servers, " ")))
	}
	if s, cut := fitSearches(searches); cut {
		searches = s
		warnings = append(warnings, fmt.Sprintf("search line limits were exceeded, some search paths have been omitted, the applied search line is: %s", strings.Join(searches, " ")))
	}
	if useHost && len(servers) == 0 && !hostNetwork {
		warnings = append(warnings, "no usable nameserver in host resolv.conf; the pod has no DNS")
	}

	var b bytes.Buffer
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(options, " "))
	}
	return b.Bytes(), warnings, nil
}

type resolv struct {
	nameservers, searches, options []string
}

// parseResolvConf reads resolv.conf as kubelet does: nameserver lines
// accumulate, the last search and options lines win, trailing dots of
// search domains are dropped so "a." and "a" count once.
func parseResolvConf(b []byte) resolv {
	var r resolv
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) >= 2 {
				r.nameservers = append(r.nameservers, f[1])
			}
		case "search":
			r.searches = nil
			for _, s := range f[1:] {
				r.searches = append(r.searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			r.options = append([]string(nil), f[1:]...)
		}
	}
	return r
}

func isLoopback(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.IsLoopback()
}

func omitDuplicates(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeOptions merges dnsConfig options into existing ones: a name given
// again takes the new value. Unlike kubelet, which iterates a map, the order
// is stable: existing options first, new names after them.
func mergeOptions(existing []string, add []v1.PodDNSConfigOption) []string {
	var names []string
	values := make(map[string]string)
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, op := range existing {
		name, value, _ := strings.Cut(op, ":")
		set(name, value)
	}
	for _, op := range add {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		set(op.Name, value)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if v := values[n]; v != "" {
			out = append(out, n+":"+v)
		} else {
			out = append(out, n)
		}
	}
	return out
}

// fitSearches applies kubelet's search line limits and reports whether it
// cut anything.
func fitSearches(in []string) ([]string, bool) {
	cut := false
	s := append([]string(nil), in...)
	if len(s) > maxDNSSearchPaths {
		s, cut = s[:maxDNSSearchPaths], true
	}
	kept := s[:0]
	for _, d := range s {
		if len(d) > maxDNSSearchPathLen {
			cut = true
			continue
		}
		kept = append(kept, d)
	}
	s = kept
	for len(s) > 0 && len(strings.Join(s, " ")) > maxDNSSearchListChars {
		s, cut = s[:len(s)-1], true
	}
	return s, cut
}

func orDefault(p, def v1.DNSPolicy) v1.DNSPolicy {
	if p == "" {
		return def
	}
	return p
}
