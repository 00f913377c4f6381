package podfile

import (
	"reflect"
	"strings"
	"testing"
)

// jsonNames lists the JSON names of a struct's own fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// TestFieldTableMatchesStructs fails when k8s.io/api gains a field the table
// does not decide on, or the table names a field that no longer exists.
func TestFieldTableMatchesStructs(t *testing.T) {
	inTable := map[string]bool{}
	for _, f := range FieldTable() {
		key := f.Struct + "." + f.Field
		if inTable[key] {
			t.Errorf("%s is listed twice", key)
		}
		inTable[key] = true
		if f.Support < Implemented || f.Support > Rejected {
			t.Errorf("%s has no support level", key)
		}
	}
	inStructs := map[string]bool{}
	for _, st := range tableStructs {
		for _, name := range jsonNames(st) {
			key := st.Name() + "." + name
			inStructs[key] = true
			if !inTable[key] {
				t.Errorf("%s is missing from the field table (fields.go): decide Implemented, IgnoredWithWarning or Rejected", key)
			}
		}
	}
	for key := range inTable {
		if !inStructs[key] {
			t.Errorf("the field table names %s, which k8s.io/api does not have", key)
		}
	}
}

// nonZero builds a value of type t that is set (not zero, not a pointer to
// zero), descending into the first field of structs.
func nonZero(t reflect.Type, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	if depth > 6 {
		return v
	}
	switch t.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(nonZero(t.Elem(), depth+1))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.String:
		v.SetString("x-value")
	case reflect.Slice:
		v.Set(reflect.MakeSlice(t, 1, 1))
		v.Index(0).Set(nonZero(t.Elem(), depth+1))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(nonZero(t.Key(), depth+1), nonZero(t.Elem(), depth+1))
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(nonZero(t.Field(i).Type, depth+1))
				break
			}
		}
	}
	return v
}

// TestFieldTableIsEnforced sets each Rejected and IgnoredWithWarning field,
// one at a time, and checks that the checker rejects or warns about exactly
// that field path.
func TestFieldTableIsEnforced(t *testing.T) {
	// Ignored fields whose every value matches what podvisor does anyway.
	silent := map[string]bool{"PodSpec.enableServiceLinks": true}

	for _, st := range tableStructs {
		for i := range st.NumField() {
			sf := st.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			row, ok := fieldIndex[st.Name()+"."+name]
			if !ok || row.Support == Implemented {
				continue
			}
			t.Run(st.Name()+"."+name, func(t *testing.T) {
				v := reflect.New(st).Elem()
				v.Field(i).Set(nonZero(sf.Type, 0))
				var p problems
				(&supportChecker{nodeName: node, p: &p}).checkStruct("x", v)
				field := "x." + name
				switch {
				case row.Support == Rejected:
					if len(p.errs) != 1 || p.errs[0].field != field || !strings.HasPrefix(p.errs[0].reason, "not supported by podvisor ") {
						t.Errorf("errors %+v, want one rejection of %s", p.errs, field)
					}
				case silent[st.Name()+"."+name]:
					if len(p.warns)+len(p.errs) != 0 {
						t.Errorf("warnings %q errors %+v, want none", p.warns, p.errs)
					}
				default:
					if len(p.errs) != 0 || len(p.warns) != 1 || !strings.HasPrefix(p.warns[0], field+": ignored by podvisor (") {
						t.Errorf("warnings %q errors %+v, want one warning for %s", p.warns, p.errs, field)
					}
				}
			})
		}
	}
}

func TestWriteFieldTableMarkdown(t *testing.T) {
	var b strings.Builder
	if err := WriteFieldTableMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"### PodSpec\n\n| field | support | note |\n| --- | --- | --- |\n",
		"| `serviceAccountName` | implemented | accepted with a warning that no token is mounted",
		"| `readinessGates` | rejected | conditions are set by controllers that static pods do not have |",
		"| `tolerations` | ignored (warning) | scheduling only |",
		"### SecurityContext\n",
		"| `seccompProfile` | implemented | RuntimeDefault, Unconfined, and Localhost (a JSON profile under --seccomp-profile-root) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if rows := strings.Count(md, "\n| `"); rows != len(FieldTable()) {
		t.Errorf("%d rows, want %d", rows, len(FieldTable()))
	}
}

// TestRejectedZeroValues sets every Rejected field that a manifest can set
// to its zero value (`hostnameOverride: ""`, an
// empty struct) and checks it is still rejected: a zero value is a value.
func TestRejectedZeroValues(t *testing.T) {
	// The rejected fields of the table are all lists today: a pointer
	// field is marked rejected for this test, so the rule stays checked.
	const marked = "PodSpec.hostnameOverride"
	saved := fieldIndex[marked]
	row := saved
	row.Support = Rejected
	fieldIndex[marked] = row
	t.Cleanup(func() { fieldIndex[marked] = saved })
	n := 0
	for _, st := range tableStructs {
		for i := range st.NumField() {
			sf := st.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			row, ok := fieldIndex[st.Name()+"."+name]
			if !ok || row.Support != Rejected || sf.Type.Kind() != reflect.Pointer {
				continue
			}
			n++
			t.Run(st.Name()+"."+name, func(t *testing.T) {
				v := reflect.New(st).Elem()
				v.Field(i).Set(reflect.New(sf.Type.Elem())) // a pointer to the zero value
				var p problems
				(&supportChecker{nodeName: node, p: &p}).checkStruct("x", v)
				if len(p.errs) != 1 || p.errs[0].field != "x."+name {
					t.Errorf("errors %+v, want %s rejected at its zero value", p.errs, name)
				}
			})
		}
	}
	if n < 1 {
		t.Fatalf("only %d rejected pointer fields tried", n)
	}
	// End to end through the decoder: a zero or false value is refused.
	for _, extra := range []string{"  activeDeadlineSeconds: 0\n", "  hostnameOverride: \"\"\n"} {
		if _, errs := parseDefault("/m/x.yaml", []byte(basePod+extra), node); len(errs) == 0 {
			t.Errorf("%q accepted", extra)
		}
	}
}
