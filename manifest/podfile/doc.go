// Package podfile turns the bytes of one manifest file into static pods,
// ConfigMaps and Secrets, with every problem at its line. It is pure: no
// file system, no watching, no state; `podvisor validate`, the manifest
// watcher and tests all call it. It never imports package manifest (the
// watcher imports it).
//
// Contract:
//
//   - Parse and ParseDocuments decode one file (YAML, possibly several
//     documents, a v1 List of Pods, ConfigMaps and Secrets, a PodList, or
//     JSON). Documents are independent: an invalid one yields no pod and
//     leaves the others valid.
//   - Decoding is the apiserver's: sigs.k8s.io/json, field names matched
//     case-sensitively ("Image:" is an unknown field, never "image:"), every
//     unknown and duplicate field reported with its path and its line.
//     Unknown fields are errors unless Options says UnknownFieldsWarn: then
//     they are warnings and the document is accepted without them. Every
//     value of the wrong kind is reported, each at its line.
//   - Decoding is bounded: a file over MaxFileSize, a document over
//     MaxDocumentSize, more than 5000 documents and List items, or more than
//     100000 values in a file are invalid; a document reports at most 100
//     errors (and sigs.k8s.io/json lists at most 100 unknown or duplicate
//     fields).
//   - Every PodSpec field is checked against podvisor's field table
//     (FieldTable: implemented, ignored with a warning, or rejected).
//     Kubernetes' defaults are applied and the pod is validated as kubelet's
//     file source does (SetObjectDefaults_Pod, then ValidatePodCreate on the
//     pod named "<name>-<node>" in namespace "default" when it has none);
//     podvisor adds its own checks: paths the runtime needs absolute, a
//     hostIP that is an address, a log directory name that fits in 255
//     bytes, quantities small enough for int64 cgroup values.
//   - A pod's identity: name "<name>-<node>", UID derived from the decoded
//     content, the file path and the node name (never from defaults or
//     timestamps), so reformatting a file keeps the UID.
//   - ConfigMaps and Secrets are defaulted (namespace "default", Secret type
//     Opaque, stringData merged into data) and validated by Kubernetes' own
//     ValidateConfigMap and ValidateSecret on the internal types; a service
//     account token Secret is refused.
//   - A pod, ConfigMap or Secret named twice in one file: the later one is
//     invalid (ErrDuplicate). Clashes across files are the watcher's.
//   - No error holds a Secret's value: a problem with a Secret's data or
//     stringData (a value of the wrong kind, bad base64, a YAML syntax
//     error on its line, Kubernetes' validators) names the line, field
//     and kind of problem, with Redacted ("<secret contents redacted>",
//     Kubernetes' phrase) where the value would stand. A document that
//     may hold a Secret but does not parse has every scalar of its text
//     treated as a value.
//   - Every problem is a *FileError rendered "path:line: field: reason"
//     (line and field when known), wrapping ErrInvalid; warnings wrap
//     ErrIgnored.
//   - Pods and objects returned are never mutated afterwards.
package podfile
