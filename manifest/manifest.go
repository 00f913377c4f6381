package manifest

import (
	"errors"
	"io"

	v1 "k8s.io/api/core/v1"

	"github.com/podvisor/podvisor/manifest/podfile"
)

// The pure decoding lives in manifest/podfile; these names keep it
// reachable as it was before the split.

// Pod is one desired pod from one manifest document (podfile.Pod).
type Pod = podfile.Pod

// Object is a ConfigMap or Secret document (podfile.Object).
type Object = podfile.Object

// FileError is a problem with a manifest file, rendered
// "path:line: field: reason" (podfile.FileError).
type FileError = podfile.FileError

// ParseOptions tune decoding; the zero value is the default (strict).
type ParseOptions = podfile.Options

// UnknownFieldPolicy says what an unknown field does (podfile.UnknownFieldPolicy).
type UnknownFieldPolicy = podfile.UnknownFieldPolicy

// The values of UnknownFieldPolicy.
const (
	UnknownFieldsError = podfile.UnknownFieldsError
	UnknownFieldsWarn  = podfile.UnknownFieldsWarn
)

// MaxFileSize is the largest manifest file podvisor reads.
const MaxFileSize = podfile.MaxFileSize

// AnnotationConfigSeen is the annotation podvisor sets on every static
// pod, as kubelet does, with the time its manifest was first seen
// (podfile.AnnotationConfigSeen).
const AnnotationConfigSeen = podfile.AnnotationConfigSeen

// ErrInvalid is wrapped by every validation and decode error
// (podfile.ErrInvalid).
var ErrInvalid = podfile.ErrInvalid

// ErrDuplicate is wrapped by the error given to a pod, ConfigMap or Secret
// that loses a namespace/name clash (podfile.ErrDuplicate). It wraps
// ErrInvalid.
var ErrDuplicate = podfile.ErrDuplicate

// ErrWaitCycle is wrapped by the error given to each pod of a cycle of
// AnnotationWaitFor (podfile.ErrWaitCycle). It wraps ErrInvalid.
var ErrWaitCycle = podfile.ErrWaitCycle

// ErrMissingPod is wrapped by the warnings about a pod AnnotationWaitFor
// names that is not defined: the pod waits for it (podfile.ErrMissingPod).
var ErrMissingPod = podfile.ErrMissingPod

// AnnotationWaitFor lists the pods (manifest names, comma-separated, same
// namespace) that must be Ready before a pod's containers start
// (podfile.AnnotationWaitFor).
const AnnotationWaitFor = podfile.AnnotationWaitFor

// ErrIgnored is wrapped by the warnings about fields that are accepted but
// ignored (podfile.ErrIgnored).
var ErrIgnored = podfile.ErrIgnored

// ErrMissingObject is wrapped by the warnings about a ConfigMap or Secret a
// pod needs that is not defined: the pod runs and its containers wait
// (podfile.ErrMissingObject).
var ErrMissingObject = podfile.ErrMissingObject

// ErrInsecure is wrapped by the Snapshot.Errors (Warnings, with
// AllowInsecure) about permissions: a directory or file that a user other
// than root can change. Such a file, or every file of such a directory, is
// not used; a pod running from it keeps its last good version, read while
// the file was secure.
var ErrInsecure = errors.New("insecure manifest permissions")

// ErrSecretReadable is wrapped by the Snapshot.Warnings about a manifest
// holding a Secret that its group or others can read: the Secret's values
// are theirs too. The file is used all the same; the warning names the
// chmod that fixes it.
var ErrSecretReadable = errors.New("Secret readable by others")

// ParseUnknownFieldPolicy parses "error" or "warn".
func ParseUnknownFieldPolicy(s string) (UnknownFieldPolicy, error) {
	return podfile.ParseUnknownFieldPolicy(s)
}

// WriteFieldTableMarkdown writes podvisor's PodSpec field table as Markdown
// (podfile.WriteFieldTableMarkdown).
func WriteFieldTableMarkdown(w io.Writer) error { return podfile.WriteFieldTableMarkdown(w) }

// ParseFile is podfile.Parse with the default options.
func ParseFile(path string, data []byte, nodeName string) ([]*Pod, []*FileError) {
	return podfile.Parse(path, data, nodeName, ParseOptions{})
}

// ParseFileOptions is podfile.Parse.
func ParseFileOptions(path string, data []byte, nodeName string, opts ParseOptions) ([]*Pod, []*FileError) {
	return podfile.Parse(path, data, nodeName, opts)
}

// Snapshot is the full desired set at one moment.
type Snapshot struct {
	// Pods is sorted by namespace/name and unique by namespace/name.
	Pods []*Pod
	// ConfigMaps are the ConfigMap documents, keyed "namespace/name"
	// (namespace "default" when unset); nil when there are none. They are
	// never mutated after emit.
	ConfigMaps map[string]*v1.ConfigMap
	// Secrets are the Secret documents, keyed like ConfigMaps; stringData is
	// merged into data, as the apiserver does.
	Secrets map[string]*v1.Secret
	// Claims are the PersistentVolumeClaim documents' bindings, keyed
	// like ConfigMaps (podfile.BindClaims): the PersistentVolume document
	// or the provisioned directory each claim uses, or why it is unbound.
	// Nil when there are none.
	Claims map[string]podfile.ClaimBinding
	// Objects are the same ConfigMaps and Secrets (and the
	// PersistentVolumeClaims and PersistentVolumes) with the file and line
	// each is taken from (a kept last good version when its document is
	// invalid now), sorted by Object.ID.
	Objects []*Object
	// ObjectErrors maps the Object.ID of each object whose document (or
	// file) is invalid now to that error: the object is its last good
	// version, kept, as a pod is (Pod.Err). Nil when there is none.
	ObjectErrors map[string]error
	// Errors holds every problem found in this scan, sorted by path and line.
	Errors []*FileError
	// Warnings holds problems that change nothing but deserve an event:
	// insecure permissions (wrapping ErrInsecure), ignored fields of
	// ConfigMaps, Secrets and Lists (wrapping ErrIgnored), ConfigMaps
	// or Secrets a pod needs that are not defined (wrapping
	// ErrMissingObject) and manifests holding a Secret that others can
	// read (wrapping ErrSecretReadable). Sorted by path and
	// line. A Source logs each one once, when it appears.
	Warnings []*FileError
}
