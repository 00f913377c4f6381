package podfile

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Reflection over the k8s.io/api types, for the walk that finds values of
// the wrong kind (types.go): the JSON names of a struct's fields, as the
// apiserver's decoder matches them (case-sensitively).

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonFieldCache      sync.Map // reflect.Type -> map[string]reflect.Type
)

// maxDepth bounds the walks over a document alongside its Go type;
// Kubernetes types nest far less, and an alias cycle or a hostile document
// must not recurse without end.
const maxDepth = 64

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
