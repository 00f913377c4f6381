package daemon

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// hostDomainWarnings: a subdomain on a node without --cluster-domain has
// no effect, and with one, setHostnameAsFQDN's FQDN over the kernel's 64
// characters keeps the pod from starting (kubelet's limit).
func hostDomainWarnings(c *Config, pod *v1.Pod) []string {
	s := &pod.Spec
	if s.Subdomain == "" || s.HostNetwork {
		return nil
	}
	fqdn := s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN
	if c.ClusterDomain == "" {
		w := []string{"spec.subdomain: no --cluster-domain is configured on this node: the pod's FQDN is not in its /etc/hosts"}
		if fqdn {
			w = append(w, "spec.setHostnameAsFQDN: no --cluster-domain is configured on this node: the hostname stays short")
		}
		return w
	}
	if !fqdn {
		return nil
	}
	h := s.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	name := h + "." + s.Subdomain + "." + pod.Namespace + ".svc." + c.ClusterDomain
	if len(name) <= 64 {
		return nil
	}
	return []string{fmt.Sprintf("spec.setHostnameAsFQDN: the FQDN %s is %d characters, over the 64 the kernel's hostname holds: the pod would wait in ContainerCreating with FailedCreatePodSandBox events", name, len(name))}
}
