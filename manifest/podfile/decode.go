package podfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"
)

// fieldProblem is a problem of one target, its field relative to the target.
type fieldProblem struct {
	field, reason string
	line          int
}

// maxStrictErrors is how many unknown and duplicate fields sigs.k8s.io/json
// reports at most for one object (it stops collecting there).
const maxStrictErrors = 100

// decodeTarget decodes t.raw into v (a pointer to a k8s.io/api type) as the
// apiserver decodes a request body: with sigs.k8s.io/json, matching field
// names case-sensitively (so "Image:" is an unknown field, never an alias of
// "image:"), and reporting every unknown and duplicate field by its path,
// which the YAML node tree turns into a line. Unknown fields are errors, or,
// under UnknownFieldsWarn, warnings (the decoder leaves them out of v).
// Duplicate fields are always errors. It returns false when the target is
// invalid.
func decodeTarget(t target, v any, opts Options, errs, warns *[]fieldProblem) bool {
	// Every value of the wrong kind, each at its line, rather than the
	// decoder's first one.
	doc, err := decodeGeneric(t.raw)
	if err != nil {
		*errs = append(*errs, fieldProblem{"", strings.TrimPrefix(err.Error(), "json: "), 0})
		return false
	}
	typ := reflect.TypeOf(v).Elem()
	typeErrs := findTypeErrors(doc, typ)
	for _, e := range typeErrs {
		*errs = append(*errs, fieldProblem{e.path, e.reason, lineOf(t.node, e.path)})
	}
	raw := []byte(t.raw)
	if len(typeErrs) > 0 {
		// The decoder stops at a value of the wrong kind and then reports
		// no unknown fields: decode the document again without those
		// values, only to list the unknown fields too.
		for _, e := range typeErrs {
			setNull(doc, e.segs)
		}
		if raw, err = json.Marshal(doc); err != nil {
			return false
		}
		v = reflect.New(typ).Interface()
	}
	strict, err := kjson.UnmarshalStrict(raw, v)
	if err != nil {
		if len(typeErrs) == 0 {
			*errs = append(*errs, fieldProblem{"", strings.TrimPrefix(err.Error(), "json: "), 0})
		}
		return false
	}
	ok := len(typeErrs) == 0
	for _, e := range strict {
		path, reason := strictProblem(e)
		p := fieldProblem{path, reason, lineOfStrict(t.node, path)}
		if reason == "unknown field" && opts.UnknownFields == UnknownFieldsWarn {
			p.reason = "unknown field, ignored"
			*warns = append(*warns, p)
			continue
		}
		*errs = append(*errs, p)
		ok = false
	}
	if len(strict) >= maxStrictErrors {
		// The decoder keeps no more than this many; a document newer than
		// podvisor adds a few fields, this many is garbage.
		last, _ := strictProblem(strict[len(strict)-1])
		*errs = append(*errs, fieldProblem{"", fmt.Sprintf("%d unknown or duplicate fields listed; any more are not", maxStrictErrors), lineOfStrict(t.node, last)})
		ok = false
	}
	return ok
}

// strictProblem splits a strict error of sigs.k8s.io/json (`unknown field
// "spec.containers[0].Image"`, `duplicate field "metadata.name"`) into the
// field path and the reason.
func strictProblem(err error) (path, reason string) {
	if fe, ok := err.(kjson.FieldError); ok {
		path = fe.FieldPath()
	}
	switch msg := err.Error(); {
	case strings.HasPrefix(msg, "unknown field"):
		return path, "unknown field"
	case strings.HasPrefix(msg, "duplicate field"):
		return path, "duplicate field"
	default:
		return path, msg
	}
}

// lineOfStrict is lineOf for the paths of sigs.k8s.io/json's strict errors,
// which join struct fields and map keys alike with "." and write sequence
// indexes as "[i]": at each mapping it takes the longest key the rest of the
// path starts with, so a key holding a dot ("example.com/x") is still found.
// It returns the line of the deepest node found, root's line when none is,
// and 0 for a nil root.
func lineOfStrict(root *yaml3.Node, path string) int {
	n := resolveAlias(root)
	if n == nil {
		return 0
	}
	line := n.Line
	for depth := 0; path != "" && depth < maxDepth; depth++ {
		n = resolveAlias(n)
		if n == nil {
			return line
		}
		if path[0] == '[' {
			end := strings.IndexByte(path, ']')
			if end < 0 || n.Kind != yaml3.SequenceNode {
				return line
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n, line = n.Content[i], n.Content[i].Line
			path = strings.TrimPrefix(path[end+1:], ".")
			continue
		}
		if n.Kind != yaml3.MappingNode {
			return line
		}
		k, v := keyPrefix(n, path, 0)
		if k == nil {
			return line
		}
		line, n = k.Line, v
		path = strings.TrimPrefix(path[len(k.Value):], ".")
	}
	return line
}

// keyPrefix finds the longest key of a mapping (its own keys first, then
// those merged in with "<<") that path starts with, as a whole segment.
func keyPrefix(n *yaml3.Node, path string, depth int) (k, v *yaml3.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if isMerge(key) || !strings.HasPrefix(path, key.Value) {
			continue
		}
		if rest := path[len(key.Value):]; rest != "" && rest[0] != '.' && rest[0] != '[' {
			continue
		}
		if k == nil || len(key.Value) > len(k.Value) {
			k, v = key, n.Content[i+1]
		}
	}
	if k != nil || depth >= maxDepth {
		return k, v
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			continue
		}
		for _, m := range mergeSources(n.Content[i+1]) {
			if m == nil || m.Kind != yaml3.MappingNode {
				continue
			}
			if mk, mv := keyPrefix(m, path, depth+1); mk != nil && (k == nil || len(mk.Value) > len(k.Value)) {
				k, v = mk, mv
			}
		}
	}
	return k, v
}
