package printers

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// objects is a list of API objects of one kind as the non-table outputs
// see them: each typed (for -o json/yaml) and in its JSON form (for
// jsonpath, custom columns and --sort-by, as kubectl evaluates them on
// the unstructured object).
type objects struct {
	kind    string // "Pod": -o name prints "pod/NAME"
	typed   []any
	names   []string
	generic []any
}

func newObjects[T any](kind string, items []T, name func(*T) string) (*objects, error) {
	objs := &objects{kind: kind}
	for i := range items {
		g, err := toGeneric(&items[i])
		if err != nil {
			return nil, err
		}
		objs.typed = append(objs.typed, &items[i])
		objs.names = append(objs.names, name(&items[i]))
		objs.generic = append(objs.generic, g)
	}
	return objs, nil
}

// toGeneric is v's JSON form as kubectl's unstructured objects hold it:
// maps, slices, strings, bools, int64 and float64.
func toGeneric(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode as json: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var g any
	if err := d.Decode(&g); err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	return numbers(g), nil
}

// numbers replaces json.Numbers by int64, or float64 when not integral.
func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	}
	return v
}

// sortBy sorts objs stably by the value expr finds in each, as kubectl
// --sort-by: objects without the field first, numbers by value, quantities
// by quantity, other strings in natural order. Finding the field in no
// object is an error.
func (objs *objects) sortBy(expr string) error {
	j, err := sortPath(expr)
	if err != nil {
		return err
	}
	keys := make([]any, len(objs.generic))
	found := false
	for i, g := range objs.generic {
		res, err := j.FindResults(g)
		if err != nil {
			return fmt.Errorf("--sort-by %s: %w", expr, err)
		}
		if len(res) > 0 && len(res[0]) > 0 {
			keys[i], found = res[0][0].Interface(), true
		}
	}
	if !found && len(keys) > 0 {
		return fmt.Errorf("--sort-by: couldn't find any field with path %q in the list of objects", expr)
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareValues(keys[a], keys[b]) })
	objs.typed, objs.names, objs.generic = permute(objs.typed, order), permute(objs.names, order), permute(objs.generic, order)
	return nil
}

func permute[T any](s []T, order []int) []T {
	out := make([]T, len(s))
	for i, j := range order {
		out[i] = s[j]
	}
	return out
}

// compareValues orders two --sort-by values; a missing one (nil) first.
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if fa, ok := number(a); ok {
		if fb, ok := number(b); ok {
			return cmp.Compare(fa, fb)
		}
	}
	sa, oka := a.(string)
	sb, okb := b.(string)
	if oka && okb {
		qa, erra := resource.ParseQuantity(sa)
		qb, errb := resource.ParseQuantity(sb)
		if erra == nil && errb == nil {
			return qa.Cmp(qb)
		}
		return naturalCompare(sa, sb)
	}
	if ba, ok := a.(bool); ok {
		if bb, ok := b.(bool); ok {
			return cmpBool(ba, bb)
		}
	}
	return naturalCompare(fmt.Sprint(a), fmt.Sprint(b))
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// naturalCompare orders strings as kubectl's sortorder.NaturalLess: runs
// of digits by their value ("pod-2" before "pod-10").
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			da, db := digits(a), digits(b)
			ta, tb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
			if len(ta) != len(tb) {
				return cmpInt(len(ta), len(tb))
			}
			if c := strings.Compare(ta, tb); c != 0 {
				return c
			}
			if len(da) != len(db) {
				return cmpInt(len(da), len(db))
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return cmpInt(int(a[0]), int(b[0]))
		}
		a, b = a[1:], b[1:]
	}
	return cmpInt(len(a), len(b))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digits(s string) string {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i]
}

func cmpInt(a, b int) int { return a - b }

// print prints the non-table outputs of objs: -o name, json, yaml (one
// object when single and there is one, else a List), jsonpath (on the
// object or the List) and custom-columns. It reports false for the table
// formats, which are the caller's.
func (objs *objects) print(w io.Writer, out output, single bool, o Options) (bool, error) {
	one := single && len(objs.typed) == 1
	switch out.kind {
	case "name":
		var b strings.Builder
		for _, n := range objs.names {
			b.WriteString(strings.ToLower(objs.kind) + "/" + n + "\n")
		}
		_, err := io.WriteString(w, Escape(b.String()))
		return true, err
	case "json", "yaml":
		if one {
			return true, PrintObject(w, objs.typed[0], out.kind)
		}
		return true, PrintObject(w, listOf(objs.typed), out.kind)
	case "jsonpath":
		var data any = map[string]any{"apiVersion": "v1", "kind": "List", "items": nonNil(objs.generic), "metadata": map[string]any{"resourceVersion": ""}}
		if one {
			data = objs.generic[0]
		}
		var b bytes.Buffer
		if err := out.template.Execute(&b, data); err != nil {
			return true, fmt.Errorf("-o jsonpath: %w", err)
		}
		_, err := io.WriteString(w, Escape(b.String()))
		return true, err
	case "custom-columns":
		return true, objs.printColumns(w, out.columns, o)
	}
	return false, nil
}

// kubeList is kubectl's List, as kubectl prints it (keys in its order).
type kubeList struct {
	APIVersion string   `json:"apiVersion"`
	Items      []any    `json:"items"`
	Kind       string   `json:"kind"`
	Metadata   listMeta `json:"metadata"`
}

type listMeta struct {
	ResourceVersion string `json:"resourceVersion"`
}

func listOf(items []any) kubeList {
	return kubeList{APIVersion: "v1", Kind: "List", Items: nonNil(items)}
}

func nonNil(items []any) []any {
	if items == nil {
		return []any{}
	}
	return items
}

// printColumns is kubectl's custom-columns printer: a value per column and
// object, the values one expression finds comma-joined, <none> for none.
func (objs *objects) printColumns(w io.Writer, cols []column, o Options) error {
	if len(objs.generic) == 0 {
		return nil
	}
	var rows [][]string
	if !o.NoHeaders {
		var h []string
		for _, c := range cols {
			h = append(h, c.header)
		}
		rows = append(rows, h)
	}
	for _, g := range objs.generic {
		var row []string
		for _, c := range cols {
			res, err := c.path.FindResults(g)
			if err != nil {
				return fmt.Errorf("column %s: %w", c.header, err)
			}
			var vals []string
			for _, r := range res {
				for _, v := range r {
					vals = append(vals, valueString(v))
				}
			}
			if len(vals) == 0 {
				vals = []string{"<none>"}
			}
			row = append(row, strings.Join(vals, ","))
		}
		rows = append(rows, row)
	}
	return (&Table{}).Print(w, rows...)
}

func valueString(v reflect.Value) string {
	if !v.IsValid() {
		return "<none>"
	}
	return fmt.Sprintf("%v", v.Interface())
}
