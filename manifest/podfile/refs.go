package podfile

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// objectRef is a pod's reference to a ConfigMap or Secret.
type objectRef struct {
	kind  string // ConfigMap or Secret
	name  string
	field string // where in the pod, such as "spec.volumes[0].configMap.name"
}

// podReferences lists the ConfigMaps and Secrets a pod needs: volumes
// (configMap, secret, projected sources), env valueFrom and envFrom of every
// container. Optional references are left out: a missing optional object is
// not an error in Kubernetes either. The field table rejects all of these
// fields today; this check is what makes them safe to allow.
func podReferences(pod *v1.Pod) []objectRef {
	var refs []objectRef
	add := func(kind, name, field string, optional *bool) {
		if optional != nil && *optional {
			return
		}
		refs = append(refs, objectRef{kind: kind, name: name, field: field})
	}
	spec := &pod.Spec
	for i, vol := range spec.Volumes {
		vp := fmt.Sprintf("spec.volumes[%d]", i)
		if cm := vol.ConfigMap; cm != nil {
			add("ConfigMap", cm.Name, vp+".configMap.name", cm.Optional)
		}
		if s := vol.Secret; s != nil {
			add("Secret", s.SecretName, vp+".secret.secretName", s.Optional)
		}
		if pr := vol.Projected; pr != nil {
			for j, src := range pr.Sources {
				sp := fmt.Sprintf("%s.projected.sources[%d]", vp, j)
				if cm := src.ConfigMap; cm != nil {
					add("ConfigMap", cm.Name, sp+".configMap.name", cm.Optional)
				}
				if s := src.Secret; s != nil {
					add("Secret", s.Name, sp+".secret.name", s.Optional)
				}
			}
		}
	}
	containers := func(field string, ctrs []v1.Container) {
		for i, c := range ctrs {
			cp := fmt.Sprintf("%s[%d]", field, i)
			for j, e := range c.EnvFrom {
				ep := fmt.Sprintf("%s.envFrom[%d]", cp, j)
				if r := e.ConfigMapRef; r != nil {
					add("ConfigMap", r.Name, ep+".configMapRef.name", r.Optional)
				}
				if r := e.SecretRef; r != nil {
					add("Secret", r.Name, ep+".secretRef.name", r.Optional)
				}
			}
			for j, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				ep := fmt.Sprintf("%s.env[%d].valueFrom", cp, j)
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					add("ConfigMap", r.Name, ep+".configMapKeyRef.name", r.Optional)
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					add("Secret", r.Name, ep+".secretKeyRef.name", r.Optional)
				}
			}
		}
	}
	containers("spec.initContainers", spec.InitContainers)
	containers("spec.containers", spec.Containers)
	return refs
}

// MissingReferences returns a warning (wrapping ErrMissingObject) for every
// ConfigMap or Secret the pod needs that is not defined in the manifest
// directory. have is given the object's id ("ConfigMap namespace/name").
// The pod is not refused: its containers wait for the object, as kubelet's.
func MissingReferences(p *Pod, have func(id string) bool) []*FileError {
	var errs []*FileError
	for _, r := range podReferences(p.Pod) {
		key := p.Pod.Namespace + "/" + r.name
		if have(r.kind + " " + key) {
			continue
		}
		errs = append(errs, &FileError{
			Path: p.Path, Line: p.Line, Field: r.field,
			Reason: fmt.Sprintf("%s %s is not defined in the manifest directory (static pods can only use local ConfigMaps and Secrets); the containers that need it wait for it", r.kind, key),
			Err:    ErrMissingObject,
		})
	}
	return errs
}
