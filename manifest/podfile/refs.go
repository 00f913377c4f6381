package podfile

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Reference is a pod's use of a ConfigMap or Secret, in the pod's
// namespace.
type Reference struct {
	// Kind is "ConfigMap" or "Secret".
	Kind string
	// Name is the object's name.
	Name string
	// Field is where in the pod, such as "spec.volumes[0].configMap.name".
	Field string
	// Key is the key named (configMapKeyRef, secretKeyRef, a volume's
	// items[].key); "" when the whole object is used.
	Key string
	// Optional is the reference's optional: true: a missing object (or
	// key) is no error and nothing waits for it.
	Optional bool
	// Pull says it is an imagePullSecrets entry: a missing one makes
	// pulls go without it (kubelet's FailedToRetrieveImagePullSecret);
	// nothing waits for it.
	Pull bool
}

// ID is the referenced object's identity among all objects, for a pod in
// namespace ns: "ConfigMap ns/name", as Object.ID.
func (r Reference) ID(ns string) string { return r.Kind + " " + ns + "/" + r.Name }

// References lists every use a pod makes of ConfigMaps and Secrets:
// volumes (configMap, secret, projected sources, with each of their
// items' keys), env valueFrom and envFrom of every container, and
// imagePullSecrets; optional ones too, marked.
func References(pod *v1.Pod) []Reference {
	var refs []Reference
	add := func(kind, name, field, key string, optional *bool) {
		refs = append(refs, Reference{Kind: kind, Name: name, Field: field, Key: key, Optional: optional != nil && *optional})
	}
	items := func(kind, name, field string, ks []v1.KeyToPath, optional *bool) {
		for i, it := range ks {
			add(kind, name, fmt.Sprintf("%s.items[%d].key", field, i), it.Key, optional)
		}
	}
	spec := &pod.Spec
	for i, vol := range spec.Volumes {
		vp := fmt.Sprintf("spec.volumes[%d]", i)
		if cm := vol.ConfigMap; cm != nil {
			add("ConfigMap", cm.Name, vp+".configMap.name", "", cm.Optional)
			items("ConfigMap", cm.Name, vp+".configMap", cm.Items, cm.Optional)
		}
		if s := vol.Secret; s != nil {
			add("Secret", s.SecretName, vp+".secret.secretName", "", s.Optional)
			items("Secret", s.SecretName, vp+".secret", s.Items, s.Optional)
		}
		if pr := vol.Projected; pr != nil {
			for j, src := range pr.Sources {
				sp := fmt.Sprintf("%s.projected.sources[%d]", vp, j)
				if cm := src.ConfigMap; cm != nil {
					add("ConfigMap", cm.Name, sp+".configMap.name", "", cm.Optional)
					items("ConfigMap", cm.Name, sp+".configMap", cm.Items, cm.Optional)
				}
				if s := src.Secret; s != nil {
					add("Secret", s.Name, sp+".secret.name", "", s.Optional)
					items("Secret", s.Name, sp+".secret", s.Items, s.Optional)
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
					add("ConfigMap", r.Name, ep+".configMapRef.name", "", r.Optional)
				}
				if r := e.SecretRef; r != nil {
					add("Secret", r.Name, ep+".secretRef.name", "", r.Optional)
				}
			}
			for j, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				ep := fmt.Sprintf("%s.env[%d].valueFrom", cp, j)
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					add("ConfigMap", r.Name, ep+".configMapKeyRef", r.Key, r.Optional)
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					add("Secret", r.Name, ep+".secretKeyRef", r.Key, r.Optional)
				}
			}
		}
	}
	containers("spec.initContainers", spec.InitContainers)
	containers("spec.containers", spec.Containers)
	for i, s := range spec.ImagePullSecrets {
		refs = append(refs, Reference{Kind: "Secret", Name: s.Name, Field: fmt.Sprintf("spec.imagePullSecrets[%d].name", i), Pull: true})
	}
	return refs
}

// HasKey reports whether the object has key: in a ConfigMap's data or
// binaryData, in a Secret's data (stringData is merged into it).
func (o *Object) HasKey(key string) bool {
	switch {
	case o.ConfigMap != nil:
		_, inData := o.ConfigMap.Data[key]
		_, inBinary := o.ConfigMap.BinaryData[key]
		return inData || inBinary
	case o.Secret != nil:
		_, ok := o.Secret.Data[key]
		return ok
	}
	return false
}

// MissingReferences returns a warning (wrapping ErrMissingObject) for every
// ConfigMap or Secret the pod needs that is not defined in the manifest
// directory, and for every key it needs that such an object lacks, at the
// line of the field (Pod.RefLines; else the pod's Line);
// optional references are left out, as a missing optional object is no
// error in Kubernetes either. object is given the object's id
// ("ConfigMap namespace/name") and returns it, or nil. The pod is not
// refused: its containers wait for the object or key, as kubelet's; a
// missing imagePullSecrets Secret only means pulls go without it.
func MissingReferences(p *Pod, object func(id string) *Object) []*FileError {
	var errs []*FileError
	warn := func(field, reason string) {
		line := p.Line
		if l := p.RefLines[strings.TrimSuffix(field, ".name")]; l > 0 {
			line = l
		}
		if l := p.RefLines[field]; l > 0 {
			line = l
		}
		errs = append(errs, &FileError{Path: p.Path, Line: line, Field: field, Reason: reason, Err: ErrMissingObject})
	}
	for _, r := range References(p.Pod) {
		if r.Optional {
			continue
		}
		key := p.Pod.Namespace + "/" + r.Name
		o := object(r.ID(p.Pod.Namespace))
		switch {
		case o == nil && r.Pull:
			warn(r.Field, fmt.Sprintf("Secret %s is not defined in the manifest directory; images are pulled without it", key))
		case o == nil && strings.Contains(r.Field, ".items["):
			// Said for the volume's object name, just before.
		case o == nil:
			field := r.Field
			if r.Key != "" {
				field += ".name"
			}
			warn(field, fmt.Sprintf("%s %s is not defined in the manifest directory (static pods can only use local ConfigMaps and Secrets); the containers that need it wait for it", r.Kind, key))
		case r.Key != "" && !o.HasKey(r.Key):
			warn(r.Field, fmt.Sprintf("key %q is not in %s %s (%s:%d); the containers that need it wait for it", r.Key, r.Kind, key, o.Path, o.Line))
		}
	}
	return errs
}
