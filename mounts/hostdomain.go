package mounts

// hostsNames is what /etc/hosts calls the pod's IPs, as kubelet's
// managedHostsFileContent writes them: "<hostname>.<domain>\t<hostname>"
// for a pod with a domain (a subdomain), else the hostname.
func hostsNames(hostname, domain string) string {
	if domain == "" {
		return hostname
	}
	return hostname + "." + domain + "\t" + hostname
}

// hostnameContent is what /etc/hostname holds: the hostname the pod's UTS
// namespace has, which containerd's CRI writes there; with
// setHostnameAsFQDN and a domain, the FQDN (the caller has checked its
// length).
func hostnameContent(p Pod) string {
	s := p.Spec.Spec
	if p.HostDomain == "" || s.HostNetwork || s.SetHostnameAsFQDN == nil || !*s.SetHostnameAsFQDN {
		return p.Hostname
	}
	return p.Hostname + "." + p.HostDomain
}
