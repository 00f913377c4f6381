package podfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is a ConfigMap, Secret, PersistentVolumeClaim or PersistentVolume
// document, indexed by namespace/name (a PersistentVolume by name) for pods
// to reference. It is never mutated after it is returned.
type Object struct {
	Kind      string // "ConfigMap", "Secret", "PersistentVolumeClaim" or "PersistentVolume"
	Key       string // namespace/name; name for a PersistentVolume
	Path      string
	Doc       int
	Line      int    // the line of metadata.name
	Hash      string // content and path, to tell a change
	ConfigMap *v1.ConfigMap
	Secret    *v1.Secret
	Claim     *v1.PersistentVolumeClaim
	Volume    *v1.PersistentVolume
	// Warnings are the ignored fields (UnknownFieldsWarn).
	Warnings []*FileError
}

// ID is the object's identity among all objects: kind and key.
func (o *Object) ID() string { return o.Kind + " " + o.Key }

// NewObject rebuilds an Object from a ConfigMap or a Secret (exactly one is
// non-nil) already decoded and validated, as the watcher's state file keeps
// them. It returns nil when both are nil.
func NewObject(path string, doc, line int, cm *v1.ConfigMap, secret *v1.Secret) *Object {
	o := &Object{Path: path, Doc: doc, Line: line, ConfigMap: cm, Secret: secret}
	switch {
	case cm != nil:
		o.Kind, o.Key = "ConfigMap", cm.Namespace+"/"+cm.Name
	case secret != nil:
		o.Kind, o.Key = "Secret", secret.Namespace+"/"+secret.Name
	default:
		return nil
	}
	o.Hash = objectHash(o, path)
	return o
}

// parseObject decodes, defaults and validates a ConfigMap or Secret.
func parseObject(path string, docRoot *yaml3.Node, t target, docIndex int, opts Options) (*Object, []*FileError) {
	var (
		errs, warns []fieldProblem
		o           = &Object{Kind: t.kind, Path: path, Doc: docIndex, Line: lineOf(docRoot, t.full("metadata.name"))}
		meta        *metav1.ObjectMeta
		p           problems
	)
	switch t.kind {
	case "ConfigMap":
		o.ConfigMap = &v1.ConfigMap{}
		if !decodeTarget(t, o.ConfigMap, opts, &errs, &warns) {
			break
		}
		meta = &o.ConfigMap.ObjectMeta
		defaultNamespace(meta)
		validateConfigMap(o.ConfigMap, &p)
	case "Secret":
		o.Secret = &v1.Secret{}
		if !decodeTarget(t, o.Secret, opts, &errs, &warns) {
			break
		}
		meta = &o.Secret.ObjectMeta
		defaultNamespace(meta)
		defaultSecret(o.Secret)
		validateSecret(o.Secret, &p)
	case "PersistentVolumeClaim":
		o.Claim = &v1.PersistentVolumeClaim{}
		if !decodeTarget(t, o.Claim, opts, &errs, &warns) {
			break
		}
		meta = &o.Claim.ObjectMeta
		validateClaim(o.Claim, &p)
	case "PersistentVolume":
		o.Volume = &v1.PersistentVolume{}
		if !decodeTarget(t, o.Volume, opts, &errs, &warns) {
			break
		}
		meta = &o.Volume.ObjectMeta
		validateVolume(o.Volume, &p)
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
	for _, w := range warns {
		o.Warnings = append(o.Warnings, &FileError{Path: path, Line: w.line, Field: t.full(w.field), Reason: w.reason, Err: ErrIgnored})
	}
	if t.kind == "Secret" && len(out)+len(o.Warnings) > 0 {
		r := secretRedactor(t.node)
		for _, e := range slices.Concat(out, o.Warnings) {
			r.scrubError(e, false)
			e.Line = secretKeyLine(t, e.Field, e.Line)
		}
	}
	if len(out) > 0 || meta == nil {
		return nil, out
	}
	o.Key = meta.Namespace + "/" + meta.Name
	if o.Volume != nil {
		o.Key = meta.Name // cluster-scoped
	}
	o.Hash = objectHash(o, path)
	return o, nil
}

// defaultNamespace puts an object without a namespace in "default", as
// kubectl apply would, before it is validated.
func defaultNamespace(meta *metav1.ObjectMeta) {
	if meta.Namespace == "" {
		meta.Namespace = "default"
	}
}

// objectHash identifies an object's content from its file.
func objectHash(o *Object, path string) string {
	var v any = o.ConfigMap
	switch {
	case o.Secret != nil:
		v = o.Secret
	case o.Claim != nil:
		v = o.Claim
	case o.Volume != nil:
		v = o.Volume
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

// secretKeyLine is the line of a Secret's data key a validation error
// names ("data[.dockerconfigjson]") when the document wrote it in
// stringData (merged into data before validation); else line.
func secretKeyLine(t target, field string, line int) int {
	key, ok := strings.CutPrefix(field, t.full("data["))
	if !ok || !strings.HasSuffix(key, "]") {
		return line
	}
	key = strings.TrimSuffix(key, "]")
	for _, f := range []string{"data", "stringData"} {
		_, m := mappingValue(t.node, f)
		if k, _ := mappingValue(m, key); k != nil {
			return k.Line
		}
	}
	return line
}
