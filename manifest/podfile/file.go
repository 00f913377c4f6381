package podfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ErrInvalid is wrapped by every validation and decode error
// (errors.Is(err, podfile.ErrInvalid); manifest.ErrInvalid is the same
// value).
var ErrInvalid = errors.New("invalid manifest")

// ErrDuplicate is wrapped by the error given to a pod, ConfigMap or Secret
// that loses a namespace/name clash with one from another file (or another
// document of the same file). It wraps ErrInvalid.
var ErrDuplicate = fmt.Errorf("duplicate name: %w", ErrInvalid)

// ErrIgnored is wrapped by the warnings about fields that are
// accepted but ignored (unknown fields of ConfigMaps, Secrets and Lists
// under UnknownFieldsWarn); pods carry theirs in Pod.Warnings.
var ErrIgnored = errors.New("ignored field")

// ErrMissingObject is wrapped by the warnings about a ConfigMap or Secret
// a pod needs that is not defined (yet): the pod is accepted, and its
// containers wait for the object, as kubelet's do.
var ErrMissingObject = errors.New("missing ConfigMap or Secret")

// ErrWaitCycle is wrapped by the error given to each pod of a cycle of
// AnnotationWaitFor (a pod that waits, through others or directly, for
// itself). It wraps ErrInvalid.
var ErrWaitCycle = fmt.Errorf("wait-for cycle: %w", ErrInvalid)

// ErrMissingPod is wrapped by the warnings about a pod AnnotationWaitFor
// names that no manifest defines (yet): the pod is accepted and waits.
var ErrMissingPod = errors.New("missing pod")

// Annotations podvisor sets on every static pod, as kubelet does.
const (
	// AnnotationConfigHash carries the pod UID (the static pod's content hash).
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigSource is "file" for pods read from the manifest directory.
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigSeen is the RFC 3339 time the manifest was read.
	AnnotationConfigSeen = "kubernetes.io/config.seen"
)

// Pod is one desired pod from one manifest document.
type Pod struct {
	// Pod is defaulted, with identity applied; it is never mutated after emit.
	Pod *v1.Pod
	// Path is the manifest file (absolute, as found in the directory).
	Path string
	// Doc is the 0-based index of the non-empty YAML document in the file.
	// Pods that are items of one List document share its Doc.
	Doc int
	// Hash equals string(Pod.UID).
	Hash string
	// Warnings lists ignored fields, one entry per field set, in the form
	// "spec.tolerations: ignored by podvisor (...)".
	Warnings []string
	// Err is non-nil when this is a last-known-good pod, which package
	// manifest keeps because its document (or its whole file) is now
	// invalid; it is the first error of that document, or of the file.
	Err error

	// Line is where metadata.name (or the document) starts, for errors that
	// point at the pod as a whole (duplicates, missing references).
	Line int
	// WarningErrors are Warnings with their lines, for reports.
	WarningErrors []*FileError
	// RefLines maps the Field of each of the pod's References (and
	// WaitForField) to its line
	// in the file, for the warnings about missing objects; a pod kept
	// from the state file has none (Line is used).
	RefLines map[string]int
}

// Key returns "namespace/name" of the pod (the name with the node suffix).
func (p *Pod) Key() string {
	return p.Pod.Namespace + "/" + p.Pod.Name
}

// FileError is a problem with a manifest file. Error() renders
// "path:line: field: reason" (":line" omitted when Line==0, "field: " omitted
// when Field=="").
//
// It marshals to JSON as {"path", "line", "field", "reason", "message"},
// "message" being Error(); these names are stable for tools.
type FileError struct {
	// Path is the manifest file (or directory).
	Path string `json:"path"`
	// Line is the 1-based line in the file, 0 when unknown.
	Line int `json:"line,omitempty"`
	// Field is the field path, such as "spec.containers[0].image".
	Field string `json:"field,omitempty"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
	// Err is the cause returned by Unwrap; nil means ErrInvalid. I/O
	// failures carry the os error instead, so they do not match ErrInvalid;
	// warnings carry ErrInsecure or ErrIgnored.
	Err error `json:"-"`
}

// MarshalJSON adds "message", the rendered error, to the fields.
func (e *FileError) MarshalJSON() ([]byte, error) {
	type plain FileError
	return json.Marshal(struct {
		*plain
		Message string `json:"message"`
	}{(*plain)(e), e.Error()})
}

// Error renders "path:line: field: reason".
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns Err, or ErrInvalid when Err is nil.
func (e *FileError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrInvalid
}
