package podfile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// typeProblem is a value of the wrong kind for its field, with its path.
type typeProblem struct {
	path, reason string
	segs         []pathSeg // the path as steps, to null the value out
}

var (
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	bytesType       = reflect.TypeFor[[]byte]()
	secretType      = reflect.TypeFor[v1.Secret]()
)

// findTypeErrors walks a decoded JSON document (objects, arrays, strings,
// json.Number, booleans, nil) alongside the Go type it is to be decoded
// into and reports every value the JSON decoder would refuse, each with its
// full path in the manifest's (JSON) field names. The decoder stops at the
// first such value and names it by Go struct fields
// ("ProbeHandler.exec.command", without list indexes); this reports all of
// them, where they are. Keys that name no field are left to the decoder's
// strict errors (decodeTarget). It stops after maxDocProblems+1 problems.
//
// Below a Secret's data and stringData no reason quotes the value: it is
// a Secret's.
func findTypeErrors(doc any, t reflect.Type) []typeProblem {
	w := typeWalk{secret: t == secretType}
	w.walk(doc, t, 0)
	return w.out
}

type typeWalk struct {
	segs   []pathSeg
	out    []typeProblem
	secret bool // the document is a Secret
}

// inSecretData reports whether the walk is below a Secret's data or
// stringData.
func (w *typeWalk) inSecretData() bool {
	return w.secret && len(w.segs) > 0 && (w.segs[0].name == "data" || w.segs[0].name == "stringData")
}

// show is how a reason quotes the value v: as it is, or, below a Secret's
// data and stringData, as Redacted.
func (w *typeWalk) show(v any) string {
	if w.inSecretData() {
		return Redacted
	}
	return fmt.Sprint(v)
}

func (w *typeWalk) path() string {
	var b strings.Builder
	for i, s := range w.segs {
		switch s.kind {
		case segField:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		case segKey:
			b.WriteString("[" + s.name + "]")
		case segIndex:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		}
	}
	return b.String()
}

func (w *typeWalk) bad(reason string) {
	w.out = append(w.out, typeProblem{w.path(), reason, slices.Clone(w.segs)})
}

func (w *typeWalk) full() bool { return len(w.out) > maxDocProblems }

func (w *typeWalk) walk(v any, t reflect.Type, depth int) {
	if depth > maxDepth || w.full() {
		return
	}
	if v == nil {
		return // null is the zero value, for every type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case quantityType:
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case json.Number:
			s = v.String()
		default:
			w.bad(fmt.Sprintf("must be a quantity (a number with an optional suffix, such as 500m, 64Mi or 1G), not %s", jsonKind(v)))
			return
		}
		if _, err := resource.ParseQuantity(s); err != nil {
			w.bad(fmt.Sprintf("%s is not a quantity (a number with an optional suffix, such as 500m, 64Mi or 1G)", w.show(strconv.Quote(s))))
		}
		return
	case intOrStringType:
		switch v := v.(type) {
		case string:
		case json.Number:
			if _, err := strconv.ParseInt(v.String(), 10, 32); err != nil {
				w.bad(fmt.Sprintf("must be an integer (a 32-bit one) or a string, got %s", w.show(v)))
			}
		default:
			w.bad("must be an integer or a string, not " + jsonKind(v))
		}
		return
	case bytesType:
		s, ok := v.(string)
		if !ok {
			w.bad("must be a base64-encoded string, not " + jsonKind(v))
		} else if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			w.bad("must be base64-encoded: " + err.Error())
		}
		return
	}
	if implementsUnmarshal(t) {
		// Another type with its own decoding (a time, raw fields): ask it.
		raw, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(raw, reflect.New(t).Interface())
		}
		if err != nil {
			reason := strings.TrimPrefix(err.Error(), "json: ")
			if w.inSecretData() {
				reason = "cannot be decoded: " + Redacted
			}
			w.bad(reason)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			w.bad("must be a mapping, not " + jsonKind(v))
			return
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := fields[k]
			if !ok {
				continue // an unknown field: the decoder reports it
			}
			w.segs = append(w.segs, pathSeg{name: k, kind: segField})
			w.walk(m[k], ft, depth+1)
			w.segs = w.segs[:len(w.segs)-1]
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			w.bad("must be a mapping, not " + jsonKind(v))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			w.segs = append(w.segs, pathSeg{name: k, kind: segKey})
			w.walk(m[k], t.Elem(), depth+1)
			w.segs = w.segs[:len(w.segs)-1]
		}
	case reflect.Slice, reflect.Array:
		a, ok := v.([]any)
		if !ok {
			w.bad("must be a list, not " + jsonKind(v))
			return
		}
		for i, e := range a {
			w.segs = append(w.segs, pathSeg{index: i, kind: segIndex})
			w.walk(e, t.Elem(), depth+1)
			w.segs = w.segs[:len(w.segs)-1]
		}
	case reflect.String:
		switch v.(type) {
		case string:
		case json.Number, bool:
			w.bad(fmt.Sprintf("must be a string, not %s; quote it (%s)", jsonKind(v), w.show(strconv.Quote(fmt.Sprint(v)))))
		default:
			w.bad("must be a string, not " + jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			w.bad("must be a boolean (true or false), not " + jsonKind(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			w.bad("must be an integer, not " + jsonKind(v))
			return
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); errors.Is(err, strconv.ErrRange) {
			w.bad(fmt.Sprintf("%s is out of range for a %d-bit integer", w.show(n), t.Bits()))
		} else if err != nil {
			w.bad(fmt.Sprintf("must be an integer, got %s", w.show(n)))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			w.bad("must be an integer, not " + jsonKind(v))
			return
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			w.bad(fmt.Sprintf("must be a non-negative %d-bit integer, got %s", t.Bits(), w.show(n)))
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			w.bad("must be a number, not " + jsonKind(v))
		}
	}
}

// jsonKind names the kind of a decoded JSON value as YAML users call it.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// setNull replaces the value at segs in a decoded JSON document with null,
// which decodes into any type as its zero value.
func setNull(doc any, segs []pathSeg) {
	v := doc
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := v.(type) {
		case map[string]any:
			if s.kind == segIndex {
				return
			}
			if last {
				if _, ok := c[s.name]; ok {
					c[s.name] = nil
				}
				return
			}
			v = c[s.name]
		case []any:
			if s.kind != segIndex || s.index < 0 || s.index >= len(c) {
				return
			}
			if last {
				c[s.index] = nil
				return
			}
			v = c[s.index]
		default:
			return
		}
	}
}

// decodeGeneric decodes JSON into objects, arrays and json.Numbers.
func decodeGeneric(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
