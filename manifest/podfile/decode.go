package podfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

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
