package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// fieldProblem is a problem of one target, its field relative to the target.
type fieldProblem struct {
	field, reason string
	line          int
}

// decodeTarget decodes t.raw strictly into v (a pointer to a k8s.io/api
// type). Unknown fields are errors, or, under UnknownFieldsWarn, warnings
// and dropped before decoding (so that encoding/json's case-insensitive
// matching cannot slip "Image:" into "image"). It returns false when the
// target is invalid.
func decodeTarget(t target, v any, opts ParseOptions, errs, warns *[]fieldProblem) bool {
	var unknown []unknownField
	findUnknownFields(t.node, reflect.TypeOf(v).Elem(), &unknown)
	raw := []byte(t.raw)
	if len(unknown) > maxUnknownFields {
		// A document newer than podvisor adds a few fields; this many is
		// garbage, and is not worth holding, listing or stripping.
		for _, u := range unknown[:maxUnknownFields] {
			*errs = append(*errs, fieldProblem{u.path, "unknown field", u.line})
		}
		*errs = append(*errs, fieldProblem{"", fmt.Sprintf("more than %d unknown fields; the rest are not listed", maxUnknownFields), unknown[maxUnknownFields].line})
		return false
	}
	// Every value of the wrong kind, each at its line, rather than
	// encoding/json's first one.
	doc, err := decodeGeneric(raw)
	if err != nil {
		*errs = append(*errs, fieldProblem{"", strings.TrimPrefix(err.Error(), "json: "), 0})
		return false
	}
	typeErrs := findTypeErrors(doc, reflect.TypeOf(v).Elem())
	for _, e := range typeErrs {
		*errs = append(*errs, fieldProblem{e.path, e.reason, lineOf(t.node, e.path)})
	}
	if len(unknown) > 0 {
		if opts.UnknownFields != UnknownFieldsWarn {
			for _, u := range unknown {
				*errs = append(*errs, fieldProblem{u.path, "unknown field", u.line})
			}
			return false
		}
		for _, u := range unknown {
			*warns = append(*warns, fieldProblem{u.path, "unknown field, ignored", u.line})
		}
		stripped, err := stripFields(raw, unknown)
		if err != nil {
			*errs = append(*errs, fieldProblem{"", "drop unknown fields: " + err.Error(), 0})
			return false
		}
		raw = stripped
	}
	if len(typeErrs) > 0 {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			line, field := lineOfLoose(t.node, te.Field)
			*errs = append(*errs, fieldProblem{field, fmt.Sprintf("cannot use a %s here, want %s", te.Value, te.Type), line})
		} else {
			*errs = append(*errs, fieldProblem{"", strings.TrimPrefix(err.Error(), "json: "), 0})
		}
		return false
	}
	return true
}

// stripFields removes the unknown fields from a JSON document.
func stripFields(raw []byte, unknown []unknownField) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep large integers exact
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	for _, u := range unknown {
		deletePath(doc, u.segs)
	}
	return json.Marshal(doc)
}

func deletePath(v any, segs []any) {
	for i, seg := range segs {
		switch s := seg.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if i == len(segs)-1 {
				delete(m, s)
				return
			}
			v = m[s]
		case int:
			a, ok := v.([]any)
			if !ok || s < 0 || s >= len(a) {
				return
			}
			v = a[s]
		}
	}
}
