package podfile

import (
	"errors"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
)

// ErrNode is wrapped by the warnings about what a valid pod needs that
// this node does not give (Options.NodeCheck): a runtime class it is not
// configured with, say. The pod would run, and wait there.
var ErrNode = errors.New("not available on this node")

// NodeCheck returns what pod needs that the node lacks, one "field:
// reason" each, the field a path in the pod ("spec.runtimeClassName").
type NodeCheck func(pod *v1.Pod) []string

// nodeWarnings asks opts.NodeCheck about a valid pod and places each
// warning at its field's line.
func nodeWarnings(path string, docRoot *yaml3.Node, t target, pod *v1.Pod, opts Options) []*FileError {
	if opts.NodeCheck == nil {
		return nil
	}
	var out []*FileError
	for _, w := range opts.NodeCheck(pod) {
		field, reason, _ := strings.Cut(w, ": ")
		out = append(out, &FileError{Path: path, Line: lineOf(docRoot, t.full(field)), Field: t.full(field), Reason: reason, Err: ErrNode})
	}
	return out
}
