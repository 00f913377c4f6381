package supervise

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// fqdnMaxLen is the longest hostname the kernel's nodename holds (64
// bytes and its terminating NUL), kubelet's limit for setHostnameAsFQDN.
const fqdnMaxLen = 64

// podHostDomain is kubelet's host domain of a pod with a subdomain:
// <subdomain>.<namespace>.svc.<cluster domain>. It is empty without a
// subdomain, and without a cluster domain (--cluster-domain): kubelet
// would write "<subdomain>.<namespace>.svc." there, a name no resolver
// answers. A pod with spec.hostnameOverride has no host domain either: the
// override replaces hostname and subdomain, as kubelet's.
func podHostDomain(pod *v1.Pod, clusterDomain string) string {
	if pod.Spec.Subdomain == "" || clusterDomain == "" || pod.Spec.HostnameOverride != nil {
		return ""
	}
	return pod.Spec.Subdomain + "." + pod.Namespace + ".svc." + clusterDomain
}

// kernelHostname is the pod's hostname as its UTS namespace has it and
// /etc/hostname says, kubelet's GetNodenameForKernel: with
// setHostnameAsFQDN and a host domain, <hostname>.<domain>, refused
// beyond the kernel's 64 bytes with kubelet's message; else the short
// hostname. A hostNetwork pod has the node's.
func kernelHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	h := podHostname(pod)
	if pod.Spec.HostNetwork {
		return h, nil
	}
	domain := podHostDomain(pod, clusterDomain)
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return h, nil
	}
	fqdn := h + "." + domain
	if len(fqdn) > fqdnMaxLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}

// checkHostname is the sandbox's hostname check: kubelet's FQDN error,
// told as the sandbox's failure; and a subdomain that has no effect on a
// node without a cluster domain is warned about once (FieldIgnored), as
// the manifest's ignored fields are.
func (w *podWorker) checkHostname(pod *v1.Pod) error {
	if pod.Spec.Subdomain != "" && w.d.clusterDomain == "" && !pod.Spec.HostNetwork && pod.Spec.HostnameOverride == nil {
		const msg = "spec.subdomain: ignored by podvisor (no --cluster-domain is configured: the pod's FQDN is not in its /etc/hosts and setHostnameAsFQDN keeps the short hostname)"
		if !w.warned[msg] {
			w.warned[msg] = true
			w.event(pod, "", v1.EventTypeWarning, "FieldIgnored", "%s", msg)
		}
	}
	_, err := kernelHostname(pod, w.d.clusterDomain)
	return err
}
