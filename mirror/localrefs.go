package mirror

import (
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// A local pod may read local ConfigMaps and Secrets (documents in the
// manifests directory that the apiserver never sees), and NodeRestriction
// refuses a mirror pod that names a ConfigMap, a Secret, a service account,
// a PVC or another API object (k8s.io/kubernetes pkg/api/pod
// HasAPIObjectReference; VisitPodSecretNames and VisitPodConfigmapNames say
// what names one). The mirror therefore shows each such reference in a form
// that names no API object, and lists the references, names and keys only,
// in LocalReferencesAnnotation. Nothing of an object's content is ever in
// the local pod's spec, so none reaches the mirror.

// LocalReferencesAnnotation on a mirror pod lists, as a JSON array of
// LocalReference, what its local pod reads from local ConfigMaps and
// Secrets (and any other object reference the mirror leaves out), in the
// order of the pod's spec. A mirror without local references has none.
const LocalReferencesAnnotation = "podvisor.io/local-references"

// LocalReference is one reference the mirror shows without its object.
type LocalReference struct {
	// Field is where the reference is in the local pod's spec:
	// spec.volumes[0].secret, spec.volumes[1].projected.sources[0].configMap,
	// spec.containers[0].env[2].valueFrom.secretKeyRef,
	// spec.initContainers[0].envFrom[1].configMapRef, spec.imagePullSecrets[0].
	Field string `json:"field"`
	// Kind is ConfigMap, Secret, PersistentVolumeClaim, ServiceAccount, or for a projected source
	// that names no object by name the source's kind (ClusterTrustBundle,
	// PodCertificate).
	Kind string `json:"kind"`
	// Name is the object's name (empty where the source has none).
	Name string `json:"name,omitempty"`
	// Key is the key a configMapKeyRef or secretKeyRef reads.
	Key string `json:"key,omitempty"`
}

// mirrorSpec is the mirror's form of the local pod's spec, and what it left
// out: NodeRestriction takes it, and it carries nothing the local one does
// not.
//
//   - configMap, secret and persistentVolumeClaim volumes (the claim is a
//     local document too), and projected volumes with any source but
//     downwardAPI, are emptyDir volumes of the same name (their mounts
//     stay as they are; the volumeDevices naming them are left out: the
//     apiserver takes a device of a claim only);
//   - an env var from a configMapKeyRef or secretKeyRef keeps its name and
//     has no value and no valueFrom;
//   - envFrom entries and imagePullSecrets are left out;
//   - serviceAccountName (and the deprecated serviceAccount) is left out,
//     with automountServiceAccountToken, which asks for that account's
//     token: a static pod gets no token, and NodeRestriction and the
//     ServiceAccount admission plugin refuse a mirror that names one. The
//     one entry spec.serviceAccountName lists the rewrite.
//
// downwardAPI volumes and fieldRef and resourceFieldRef env vars stay:
// NodeRestriction takes them.
func mirrorSpec(local *v1.PodSpec) (v1.PodSpec, []LocalReference) {
	spec := *local.DeepCopy()
	var refs []LocalReference
	add := func(field, kind, name, key string) {
		refs = append(refs, LocalReference{Field: field, Kind: kind, Name: name, Key: key})
	}

	rewritten := map[string]bool{}
	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		path := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case vol.ConfigMap != nil:
			add(path+".configMap", "ConfigMap", vol.ConfigMap.Name, "")
		case vol.Secret != nil:
			add(path+".secret", "Secret", vol.Secret.SecretName, "")
		case vol.PersistentVolumeClaim != nil:
			add(path+".persistentVolumeClaim", "PersistentVolumeClaim", vol.PersistentVolumeClaim.ClaimName, "")
		case vol.Projected != nil && !onlyDownwardAPI(vol.Projected):
			for j, s := range vol.Projected.Sources {
				src := fmt.Sprintf("%s.projected.sources[%d]", path, j)
				switch {
				case s.ConfigMap != nil:
					add(src+".configMap", "ConfigMap", s.ConfigMap.Name, "")
				case s.Secret != nil:
					add(src+".secret", "Secret", s.Secret.Name, "")
				case s.ServiceAccountToken != nil:
					add(src+".serviceAccountToken", "ServiceAccount", "", "")
				case s.ClusterTrustBundle != nil:
					add(src+".clusterTrustBundle", "ClusterTrustBundle", ptrValue(s.ClusterTrustBundle.Name), "")
				case s.PodCertificate != nil:
					add(src+".podCertificate", "PodCertificate", "", "")
				}
			}
		default:
			continue
		}
		vol.VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
		rewritten[vol.Name] = true
	}

	containers := func(list []v1.Container, field string) {
		for i := range list {
			c := &list[i]
			path := fmt.Sprintf("spec.%s[%d]", field, i)
			for j, ef := range c.EnvFrom {
				switch {
				case ef.ConfigMapRef != nil:
					add(fmt.Sprintf("%s.envFrom[%d].configMapRef", path, j), "ConfigMap", ef.ConfigMapRef.Name, "")
				case ef.SecretRef != nil:
					add(fmt.Sprintf("%s.envFrom[%d].secretRef", path, j), "Secret", ef.SecretRef.Name, "")
				}
			}
			c.EnvFrom = nil
			c.VolumeDevices = slices.DeleteFunc(c.VolumeDevices, func(d v1.VolumeDevice) bool { return rewritten[d.Name] })
			if len(c.VolumeDevices) == 0 {
				c.VolumeDevices = nil
			}
			for j := range c.Env {
				e := &c.Env[j]
				if e.ValueFrom == nil {
					continue
				}
				switch {
				case e.ValueFrom.ConfigMapKeyRef != nil:
					r := e.ValueFrom.ConfigMapKeyRef
					add(fmt.Sprintf("%s.env[%d].valueFrom.configMapKeyRef", path, j), "ConfigMap", r.Name, r.Key)
				case e.ValueFrom.SecretKeyRef != nil:
					r := e.ValueFrom.SecretKeyRef
					add(fmt.Sprintf("%s.env[%d].valueFrom.secretKeyRef", path, j), "Secret", r.Name, r.Key)
				default:
					continue
				}
				e.Value, e.ValueFrom = "", nil
			}
		}
	}
	containers(spec.InitContainers, "initContainers")
	containers(spec.Containers, "containers")

	for i, r := range spec.ImagePullSecrets {
		add(fmt.Sprintf("spec.imagePullSecrets[%d]", i), "Secret", r.Name, "")
	}
	spec.ImagePullSecrets = nil
	if spec.ServiceAccountName != "" || spec.DeprecatedServiceAccount != "" {
		name := spec.ServiceAccountName
		if name == "" {
			name = spec.DeprecatedServiceAccount
		}
		add("spec.serviceAccountName", "ServiceAccount", name, "")
		spec.ServiceAccountName, spec.DeprecatedServiceAccount = "", ""
		spec.AutomountServiceAccountToken = nil
	}
	return spec, refs
}

// onlyDownwardAPI says whether a projected volume reads nothing but the
// downward API, which NodeRestriction takes.
func onlyDownwardAPI(p *v1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.DownwardAPI == nil {
			return false
		}
	}
	return true
}

func ptrValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// localReferencesJSON is the annotation's value.
func localReferencesJSON(refs []LocalReference) string {
	data, err := json.Marshal(refs)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return string(data)
}
