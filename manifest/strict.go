package manifest

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	yaml3 "go.yaml.in/yaml/v3"
)

// unknownField is a mapping key that names no field of the Go type it is
// decoded into.
type unknownField struct {
	path string
	line int
	segs []any // path as JSON keys (string) and indexes (int), to strip it
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonFieldCache      sync.Map // reflect.Type -> map[string]reflect.Type
)

// findUnknownFields walks the YAML tree alongside the Go type and reports
// every key that the strict JSON decoder would reject. Unlike encoding/json
// it matches case-sensitively, as the apiserver does, so "Image:" is an error
// rather than a silent alias of "image:". It exists to give unknown fields a
// full path and a line; sigs.k8s.io/yaml only names the key. It stops after
// maxUnknownFields+1 of them: the caller says "too many" rather than holding
// a hostile document's every key.
func findUnknownFields(n *yaml3.Node, t reflect.Type, out *[]unknownField) {
	w := unknownWalk{out: out}
	w.walk(n, t, 0)
}

// maxUnknownDepth bounds the walk; Kubernetes types nest far less, and an
// alias cycle or a hostile document must not recurse without end.
const maxUnknownDepth = 64

// maxUnknownFields is how many unknown fields one object may report.
const maxUnknownFields = maxDocProblems

// pathSeg is one step of the walk: a struct field or map key (name), or a
// sequence index.
type pathSeg struct {
	name  string
	index int
	kind  segKind
}

type segKind int

const (
	segField segKind = iota // .name
	segKey                  // [name]
	segIndex                // [index]
)

// unknownWalk keeps the path of the node being visited as a stack, so that
// the path strings are built only for the unknown fields found; a walk
// that built one per node would cost more than the node tree itself.
type unknownWalk struct {
	segs []pathSeg
	out  *[]unknownField
}

func (w *unknownWalk) found(line int) {
	var b strings.Builder
	segs := make([]any, 0, len(w.segs))
	for i, s := range w.segs {
		switch s.kind {
		case segField:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
			segs = append(segs, s.name)
		case segKey:
			b.WriteString("[" + s.name + "]")
			segs = append(segs, s.name)
		case segIndex:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			segs = append(segs, s.index)
		}
	}
	*w.out = append(*w.out, unknownField{path: b.String(), line: line, segs: segs})
}

func (w *unknownWalk) full() bool { return len(*w.out) > maxUnknownFields }

func (w *unknownWalk) walk(n *yaml3.Node, t reflect.Type, depth int) {
	if depth > maxUnknownDepth || w.full() {
		return
	}
	n = resolveAlias(n)
	if n == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !hasFields(t) {
		return // strings, numbers, quantities: nothing below can be unknown
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml3.MappingNode {
			return // a type mismatch; the decoder reports it
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content) && !w.full(); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isMerge(k) {
				for _, m := range mergeSources(v) {
					w.walk(m, t, depth+1)
				}
				continue
			}
			w.segs = append(w.segs, pathSeg{name: k.Value, kind: segField})
			if ft, ok := fields[k.Value]; ok {
				w.walk(v, ft, depth+1)
			} else {
				w.found(k.Line)
			}
			w.segs = w.segs[:len(w.segs)-1]
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml3.SequenceNode {
			return
		}
		for i, c := range n.Content {
			w.segs = append(w.segs, pathSeg{index: i, kind: segIndex})
			w.walk(c, t.Elem(), depth+1)
			w.segs = w.segs[:len(w.segs)-1]
		}
	case reflect.Map:
		if n.Kind != yaml3.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isMerge(k) {
				continue
			}
			w.segs = append(w.segs, pathSeg{name: k.Value, kind: segKey})
			w.walk(v, t.Elem(), depth+1)
			w.segs = w.segs[:len(w.segs)-1]
		}
	}
}

var hasFieldsCache sync.Map // reflect.Type -> bool

// hasFields reports whether a value of type t can hold a struct whose keys
// the walk checks: a struct decoded field by field, or a slice, array or
// map of one.
func hasFields(t reflect.Type) bool {
	if v, ok := hasFieldsCache.Load(t); ok {
		return v.(bool)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var has bool
	switch {
	case implementsUnmarshal(t):
	case t.Kind() == reflect.Struct:
		has = true
	case t.Kind() == reflect.Slice, t.Kind() == reflect.Array, t.Kind() == reflect.Map:
		has = hasFields(t.Elem())
	}
	hasFieldsCache.Store(t, has)
	return has
}

func implementsUnmarshal(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || pt.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// jsonFields maps the JSON names of t's fields (with embedded structs
// promoted, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonFieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, dup := m[k]; !dup {
						m[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	jsonFieldCache.Store(t, m)
	return m
}

func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
