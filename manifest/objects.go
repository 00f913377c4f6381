package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	yaml3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// object is a ConfigMap or Secret document, indexed by namespace/name for
// pods to reference.
type object struct {
	kind   string // "ConfigMap" or "Secret"
	key    string // namespace/name
	path   string
	doc    int
	line   int
	hash   string // content and path, to tell a change
	cm     *v1.ConfigMap
	secret *v1.Secret
	warns  []*FileError
}

// id is the object's identity among all objects: kind and key.
func (o *object) id() string { return o.kind + " " + o.key }

// maxObjectSize is the limit on the data of one ConfigMap or Secret
// (k8s.io/kubernetes pkg/apis/core/types.go MaxSecretSize; ConfigMaps have
// the same 1 MiB limit).
const maxObjectSize = 1 << 20

// parseObject decodes and validates a ConfigMap or Secret.
func parseObject(path string, docRoot *yaml3.Node, t target, docIndex int, opts ParseOptions) (*object, []*FileError) {
	var (
		errs, warns []fieldProblem
		o           = &object{kind: t.kind, path: path, doc: docIndex, line: lineOf(docRoot, t.full("metadata.name"))}
		meta        *metav1.ObjectMeta
		p           problems
	)
	switch t.kind {
	case "ConfigMap":
		o.cm = &v1.ConfigMap{}
		if !decodeTarget(t, o.cm, opts, &errs, &warns) {
			break
		}
		meta = &o.cm.ObjectMeta
		validateConfigMap(o.cm, &p)
	case "Secret":
		o.secret = &v1.Secret{}
		if !decodeTarget(t, o.secret, opts, &errs, &warns) {
			break
		}
		meta = &o.secret.ObjectMeta
		defaultSecret(o.secret)
		validateSecret(o.secret, &p)
	}
	var out []*FileError
	for _, e := range errs {
		line := e.line
		if line == 0 {
			line = lineOf(docRoot, t.full(e.field))
		}
		out = append(out, &FileError{Path: path, Line: line, Field: t.full(e.field), Reason: e.reason})
	}
	for _, e := range p.errs {
		out = append(out, &FileError{Path: path, Line: lineOf(docRoot, t.full(e.field)), Field: t.full(e.field), Reason: e.reason})
	}
	if len(out) > 0 || meta == nil {
		return nil, out
	}
	for _, w := range warns {
		o.warns = append(o.warns, &FileError{Path: path, Line: w.line, Field: t.full(w.field), Reason: w.reason, Err: ErrIgnored})
	}
	if meta.Namespace == "" {
		meta.Namespace = "default"
	}
	o.key = meta.Namespace + "/" + meta.Name
	o.hash = objectHash(o, path)
	return o, nil
}

// objectHash identifies an object's content from its file.
func objectHash(o *object, path string) string {
	var v any = o.cm
	if o.secret != nil {
		v = o.secret
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(err.Error())
	}
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(path))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// validateObjectMeta follows ValidateObjectMeta as ValidateConfigMap and
// ValidateSecret call it (TestValidateConfigMap, TestValidateSecret in
// pkg/apis/core/validation/validation_test.go: "invalid name", "empty name",
// "invalid namespace"): the name is a DNS-1123 subdomain, the namespace a
// DNS-1123 label, and the rest of the metadata is within the apiserver's
// limits.
func validateObjectMeta(meta *metav1.ObjectMeta, p *problems) {
	switch {
	case meta.Name == "":
		p.invalid("metadata.name", "required")
	default:
		for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
			p.invalid("metadata.name", msg)
		}
	}
	if meta.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(meta.Namespace) {
			p.invalid("metadata.namespace", msg)
		}
	}
	validateMeta(meta, p)
}

// validateConfigMap follows ValidateConfigMap (TestValidateConfigMap: "bad
// key", "key with leading dots", "overlapping keys" between data and
// binaryData, "too large"): keys are valid config-map keys, unique across
// data and binaryData, and the whole is at most 1 MiB.
func validateConfigMap(cm *v1.ConfigMap, p *problems) {
	validateObjectMeta(&cm.ObjectMeta, p)
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		if _, dup := cm.BinaryData[k]; dup {
			p.invalidf("data["+k+"]", "duplicate of key %q present in binaryData", k)
		}
	}
	size := dataKeys(p, "data", cm.Data) + dataKeys(p, "binaryData", cm.BinaryData)
	if size > maxObjectSize {
		p.invalidf("data", "too long: must have at most %d bytes, got %d", maxObjectSize, size)
	}
}

// dataKeys checks that the keys of a ConfigMap's or Secret's data field
// are valid config-map keys and returns the size of the values.
func dataKeys[V string | []byte](p *problems, field string, data map[string]V) int {
	size := 0
	for _, k := range slices.Sorted(maps.Keys(data)) {
		for _, msg := range validation.IsConfigMapKey(k) {
			p.invalid(field+"["+k+"]", msg)
		}
		size += len(data[k])
	}
	return size
}

// defaultSecret applies what the apiserver does before validation: type
// Opaque when unset, and stringData merged into data (stringData wins).
func defaultSecret(s *v1.Secret) {
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

// validateSecret follows ValidateSecret (TestValidateSecret: "bad key",
// "leading dot key", "too large", and the per-type cases "missing tls.key",
// "missing ssh-privatekey", "basic auth without username or password",
// "dockercfg invalid JSON"): keys are valid config-map keys, the data is at
// most 1 MiB, and the well-known types carry their keys. Service account
// token secrets are rejected: static pods cannot use them.
func validateSecret(s *v1.Secret, p *problems) {
	validateObjectMeta(&s.ObjectMeta, p)
	if size := dataKeys(p, "data", s.Data); size > maxObjectSize {
		p.invalidf("data", "too long: must have at most %d bytes, got %d", maxObjectSize, size)
	}
	need := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				p.invalidf("data["+k+"]", "required for a Secret of type %s", s.Type)
			}
		}
	}
	jsonKey := func(k string) {
		if b, ok := s.Data[k]; ok && !json.Valid(b) {
			p.invalidf("data["+k+"]", "must be valid JSON for a Secret of type %s", s.Type)
		}
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		p.invalid("type", notSupported("static pods cannot use service account tokens"))
	case v1.SecretTypeDockercfg:
		need(v1.DockerConfigKey)
		jsonKey(v1.DockerConfigKey)
	case v1.SecretTypeDockerConfigJson:
		need(v1.DockerConfigJsonKey)
		jsonKey(v1.DockerConfigJsonKey)
	case v1.SecretTypeBasicAuth:
		if len(s.Data[v1.BasicAuthUsernameKey]) == 0 && len(s.Data[v1.BasicAuthPasswordKey]) == 0 {
			p.invalidf("data", "a Secret of type %s needs %s or %s", s.Type, v1.BasicAuthUsernameKey, v1.BasicAuthPasswordKey)
		}
	case v1.SecretTypeSSHAuth:
		need(v1.SSHAuthPrivateKey)
	case v1.SecretTypeTLS:
		need(v1.TLSCertKey, v1.TLSPrivateKeyKey)
	}
}

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

// missingReferences returns an error for every ConfigMap or Secret the pod
// needs that is not defined in the manifest directory. have is given the
// object's id ("ConfigMap namespace/name").
func missingReferences(p *Pod, have func(id string) bool) []*FileError {
	var errs []*FileError
	for _, r := range podReferences(p.Pod) {
		key := p.Pod.Namespace + "/" + r.name
		if have(r.kind + " " + key) {
			continue
		}
		errs = append(errs, &FileError{
			Path: p.Path, Line: p.line, Field: r.field,
			Reason: fmt.Sprintf("%s %s is not defined in the manifest directory (static pods can only use local ConfigMaps and Secrets)", r.kind, key),
		})
	}
	return errs
}
