package manifest

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
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
// full path and a line; sigs.k8s.io/yaml only names the key.
func findUnknownFields(n *yaml3.Node, t reflect.Type, path string, out *[]unknownField) {
	findUnknown(n, t, path, nil, out, 0)
}

// maxUnknownDepth bounds the walk; Kubernetes types nest far less, and an
// alias cycle or a hostile document must not recurse without end.
const maxUnknownDepth = 64

func findUnknown(n *yaml3.Node, t reflect.Type, path string, segs []any, out *[]unknownField, depth int) {
	if depth > maxUnknownDepth {
		return
	}
	n = resolveAlias(n)
	if n == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if implementsUnmarshal(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml3.MappingNode {
			return // a type mismatch; the decoder reports it
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isMerge(k) {
				for _, m := range mergeSources(v) {
					findUnknown(m, t, path, segs, out, depth+1)
				}
				continue
			}
			p := joinField(path, k.Value)
			s := append(slices.Clip(segs), k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				*out = append(*out, unknownField{path: p, line: k.Line, segs: s})
				continue
			}
			findUnknown(v, ft, p, s, out, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml3.SequenceNode {
			return
		}
		for i, c := range n.Content {
			findUnknown(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", append(slices.Clip(segs), i), out, depth+1)
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
			findUnknown(v, t.Elem(), path+"["+k.Value+"]", append(slices.Clip(segs), k.Value), out, depth+1)
		}
	}
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
