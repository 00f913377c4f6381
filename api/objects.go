package api

import (
	"context"
	"net/http"
	"net/url"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectSource answers GET /objects: the ConfigMaps and Secrets the daemon
// uses now. The daemon's view of the manifest source is one.
type ObjectSource interface {
	// Objects returns the objects in use and the pods' references; the
	// caller must not modify what it returns.
	Objects() ObjectList
}

// ObjectList is GET /objects's answer: the local ConfigMaps and Secrets
// in use, sorted by kind, namespace and name, with Secret values removed.
type ObjectList struct {
	Items []Object `json:"items"`
	// Missing are the pods' references to ConfigMaps and Secrets that are
	// not defined (Exists false), optional ones included.
	Missing []ObjectReference `json:"missing,omitempty"`
}

// Object is one ConfigMap or Secret as the daemon uses it: the last good
// version of its document.
type Object struct {
	// Kind is "ConfigMap" or "Secret".
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// File and Line are where it is defined (the line of metadata.name).
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// Error is set when its document (or file) is invalid now: this is
	// the last good version, kept, as a pod's is. Errors are all the
	// current errors of its file, "path:line: field: reason".
	Error  string   `json:"error,omitempty"`
	Errors []string `json:"errors,omitempty"`
	// Warnings are its ignored fields.
	Warnings []string `json:"warnings,omitempty"`
	// UsedBy are the pods' references to it, optional ones and
	// imagePullSecrets included.
	UsedBy []ObjectReference `json:"usedBy,omitempty"`
	// ConfigMap is the ConfigMap, whole (creationTimestamp: when this
	// podvisor first saw this version).
	ConfigMap *v1.ConfigMap `json:"configMap,omitempty"`
	// Secret is the Secret with every value of data removed (each key
	// maps to null) and stringData empty: no Secret value leaves the
	// daemon. Its last-applied-configuration annotation, which would
	// hold the values, is replaced by RedactedValue.
	Secret *v1.Secret `json:"secret,omitempty"`
	// DataSizes is the size in bytes of each value of a Secret's data,
	// for describe's "key: N bytes".
	DataSizes map[string]int `json:"dataSizes,omitempty"`
	// PersistentVolumeClaim and PersistentVolume are such documents,
	// whole; a claim's status says whether it is bound, and to what
	// (spec.volumeName, or the provisioned directory in the
	// podvisor.io/volume-path annotation).
	PersistentVolumeClaim *v1.PersistentVolumeClaim `json:"persistentVolumeClaim,omitempty"`
	PersistentVolume      *v1.PersistentVolume      `json:"persistentVolume,omitempty"`
}

// ObjectReference is a pod's use of a ConfigMap or Secret.
type ObjectReference struct {
	// Pod is the pod's "namespace/name".
	Pod string `json:"pod"`
	// Kind and Name name the object, in the pod's namespace.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Field is where in the pod: "spec.volumes[0].configMap.name".
	Field string `json:"field"`
	// Key is the key used, when one is named.
	Key string `json:"key,omitempty"`
	// Optional is the reference's optional: true.
	Optional bool `json:"optional,omitempty"`
	// ImagePull says it is in imagePullSecrets.
	ImagePull bool `json:"imagePull,omitempty"`
	// Exists says the object is defined; KeyMissing that it lacks Key.
	Exists     bool `json:"exists"`
	KeyMissing bool `json:"keyMissing,omitempty"`
}

// RedactedValue replaces what would show a Secret's value.
const RedactedValue = "(redacted)"

// lastApplied is kubectl apply's annotation: it holds the whole object
// as applied, values included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// registerObjects adds GET /objects (?kind=ConfigMap or Secret narrows
// it); without an ObjectSource it answers 501.
func registerObjects(mux *http.ServeMux, o Options) {
	mux.HandleFunc("GET /objects", func(w http.ResponseWriter, r *http.Request) {
		if o.Objects == nil {
			writeStatus(w, http.StatusNotImplemented, metav1.StatusReasonBadRequest, "", "this podvisor lists no ConfigMaps or Secrets")
			return
		}
		kind := r.URL.Query().Get("kind")
		if kind != "" && kind != "ConfigMap" && kind != "Secret" && kind != "PersistentVolumeClaim" && kind != "PersistentVolume" {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "", "kind "+kind+": want ConfigMap, Secret, PersistentVolumeClaim or PersistentVolume")
			return
		}
		all := o.Objects.Objects()
		out := ObjectList{Items: []Object{}}
		for _, obj := range all.Items {
			if kind == "" || obj.Kind == kind {
				out.Items = append(out.Items, redacted(obj))
			}
		}
		for _, m := range all.Missing {
			if kind == "" || m.Kind == kind {
				out.Missing = append(out.Missing, m)
			}
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// redacted is obj without any Secret value: a new Secret holding the
// metadata (the last-applied annotation replaced), the type and data's
// keys only; the source's objects are not touched.
func redacted(obj Object) Object {
	if obj.Secret == nil {
		return obj
	}
	s := obj.Secret
	c := &v1.Secret{TypeMeta: s.TypeMeta, ObjectMeta: *s.ObjectMeta.DeepCopy(), Type: s.Type}
	if s.Immutable != nil {
		immutable := *s.Immutable
		c.Immutable = &immutable
	}
	if _, ok := c.Annotations[lastApplied]; ok {
		c.Annotations[lastApplied] = RedactedValue
	}
	c.ManagedFields = nil
	sizes := map[string]int{}
	if len(s.Data) > 0 {
		c.Data = make(map[string][]byte, len(s.Data))
		for k, v := range s.Data {
			c.Data[k] = nil
			sizes[k] = len(v)
		}
	}
	for k, v := range s.StringData { // merged by the manifest reader; never sent either way
		if c.Data == nil {
			c.Data = map[string][]byte{}
		}
		c.Data[k] = nil
		sizes[k] = len(v)
	}
	obj.Secret = c
	obj.DataSizes = sizes
	if len(sizes) == 0 {
		obj.DataSizes = nil
	}
	return obj
}

// Objects returns the ConfigMaps and Secrets podvisor uses (kind
// "ConfigMap" or "Secret", or "" for both), with Secret values removed.
func (c *Client) Objects(ctx context.Context, kind string) (*ObjectList, error) {
	var q url.Values
	if kind != "" {
		q = url.Values{"kind": {kind}}
	}
	var list ObjectList
	if err := c.getJSON(ctx, "/objects", q, &list); err != nil {
		return nil, err
	}
	return &list, nil
}
