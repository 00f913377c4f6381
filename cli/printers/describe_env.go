package printers

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/api/v1/resource"
	"k8s.io/kubernetes/pkg/fieldpath"
)

// describeEnv prints a container's env and envFrom as kubectl describe
// does: a value from a ConfigMap or Secret is named, never shown; a
// fieldRef is resolved from the pod, a resourceFieldRef from the
// container.
func describeEnv(p printer, pod *v1.Pod, c *v1.Container) {
	if len(c.EnvFrom) > 0 {
		p(2, "Environment Variables from:")
		for _, e := range c.EnvFrom {
			from, name, optional := "", "", false
			switch {
			case e.ConfigMapRef != nil:
				from, name, optional = "ConfigMap", e.ConfigMapRef.Name, e.ConfigMapRef.Optional != nil && *e.ConfigMapRef.Optional
			case e.SecretRef != nil:
				from, name, optional = "Secret", e.SecretRef.Name, e.SecretRef.Optional != nil && *e.SecretRef.Optional
			}
			if e.Prefix != "" {
				from += " with prefix '" + e.Prefix + "'"
			}
			p(3, "%s\t%s\tOptional: %t", name, from, optional)
		}
	}
	if len(c.Env) == 0 {
		p(2, "Environment:\t<none>")
		return
	}
	p(2, "Environment:")
	for _, e := range c.Env {
		vf := e.ValueFrom
		switch {
		case vf == nil:
			p(3, "%s:\t%s", e.Name, e.Value)
		case vf.FieldRef != nil:
			p(3, "%s:\t%s (%s:%s)", e.Name, fieldRefString(pod, vf.FieldRef.FieldPath), vf.FieldRef.APIVersion, vf.FieldRef.FieldPath)
		case vf.ResourceFieldRef != nil:
			v, err := resource.ExtractContainerResourceValue(vf.ResourceFieldRef, c)
			r := vf.ResourceFieldRef.Resource
			if err != nil {
				v = ""
			} else if v == "0" && (r == "limits.cpu" || r == "limits.memory") {
				v = "node allocatable"
			}
			p(3, "%s:\t%s (%s)", e.Name, v, r)
		case vf.SecretKeyRef != nil:
			r := vf.SecretKeyRef
			p(3, "%s:\t<set to the key '%s' in secret '%s'>\tOptional: %t", e.Name, r.Key, r.Name, r.Optional != nil && *r.Optional)
		case vf.ConfigMapKeyRef != nil:
			r := vf.ConfigMapKeyRef
			p(3, "%s:\t<set to the key '%s' of config map '%s'>\tOptional: %t", e.Name, r.Key, r.Name, r.Optional != nil && *r.Optional)
		default:
			p(3, "%s:\t", e.Name)
		}
	}
}

// fieldRefString is a fieldRef's value as the pod shows it.
func fieldRefString(pod *v1.Pod, path string) string {
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	case "status.hostIP":
		return pod.Status.HostIP
	case "status.hostIPs":
		var ips []string
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ",")
	case "status.podIP":
		return pod.Status.PodIP
	case "status.podIPs":
		var ips []string
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ",")
	}
	v, _ := fieldpath.ExtractFieldPathAsString(pod, path)
	return v
}
