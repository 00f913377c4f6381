package podfile

import (
	"strings"
	"testing"
)

// TestFieldNamesCaseSensitive: field names match as the apiserver matches
// them (sigs.k8s.io/json), case-sensitively. "Image:" is an unknown field at
// its line, never an alias of "image:" (encoding/json would take it as one);
// under UnknownFieldsWarn it is dropped with a warning, so it can neither set
// the image nor replace one.
func TestFieldNamesCaseSensitive(t *testing.T) {
	const wrongCase = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    Image: busybox:1.36
`
	const both = basePod + "    Image: evil:1\n"
	const jsonBoth = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
"spec": {"containers": [{"name": "app", "image": "busybox:1.36",
"Image": "evil:1"}]}}`
	const list = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: web}
  spec:
    containers:
    - name: app
      image: busybox:1.36
Items:
- apiVersion: v1
  kind: Pod
  metadata: {name: web}
  spec:
    containers:
    - name: app
      image: evil:1
`
	tests := []struct {
		name, data string
		opts       Options
		errs       []string
		image      string   // of the pod, when valid
		warns      []string // of the pod, when valid
	}{
		{"wrong case is unknown", wrongCase, Options{}, []string{
			"/m/x.yaml:8: spec.containers[0].Image: unknown field",
		}, "", nil},
		{"wrong case beside the right one", both, Options{}, []string{
			"/m/x.yaml:9: spec.containers[0].Image: unknown field",
		}, "", nil},
		{"wrong case in JSON", jsonBoth, Options{}, []string{
			"/m/x.yaml:3: spec.containers[0].Image: unknown field",
		}, "", nil},
		{"warn: wrong case does not set the image", wrongCase, Options{UnknownFields: UnknownFieldsWarn}, []string{
			"/m/x.yaml:7: spec.containers[0].image: Required value",
		}, "", nil},
		{"warn: wrong case does not replace the image", both, Options{UnknownFields: UnknownFieldsWarn}, nil,
			"busybox:1.36", []string{"spec.containers[0].Image: unknown field, ignored"}},
		{"wrong case of a List's items", list, Options{}, []string{
			"/m/x.yaml:11: Items: unknown field",
		}, "", nil},
		// The List's items are decoded case-sensitively too: only
		// "items" holds them.
		{"warn: wrong case does not replace a List's items", list, Options{UnknownFields: UnknownFieldsWarn}, nil,
			"busybox:1.36", []string{"Items: unknown field, ignored"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := Parse("/m/x.yaml", []byte(tt.data), node, tt.opts)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.errs, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.errs, "\n"))
			}
			if len(tt.errs) > 0 {
				if len(pods) != 0 {
					t.Errorf("%d pods from an invalid document", len(pods))
				}
				return
			}
			if len(pods) != 1 {
				t.Fatalf("%d pods", len(pods))
			}
			if img := pods[0].Pod.Spec.Containers[0].Image; img != tt.image {
				t.Errorf("image %q, want %q", img, tt.image)
			}
			if strings.Join(pods[0].Warnings, "\n") != strings.Join(tt.warns, "\n") {
				t.Errorf("warnings %q, want %q", pods[0].Warnings, tt.warns)
			}
		})
	}
}

// TestLineOfStrict: the paths of sigs.k8s.io/json's strict errors map to
// the line of the key, through indexes, merge keys and keys with dots.
func TestLineOfStrict(t *testing.T) {
	const doc = `metadata:
  annotations:
    example.com/a.b: x
spec:
  base: &b
    bogus: 1
  containers:
  - name: a
  - <<: *b
    name: b
`
	root, ferr := parseNode("/m/x.yaml", splitDocuments([]byte(doc))[0], nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	for path, want := range map[string]int{
		"metadata.annotations.example.com/a.b": 3,
		"spec.containers[1].bogus":             6,
		"spec.containers[1].name":              10,
		"spec.containers[0].missing":           8,
		"spec.containers[7]":                   7,
		"nothing":                              1,
	} {
		if got := lineOfStrict(root, path); got != want {
			t.Errorf("lineOfStrict(%q) = %d, want %d", path, got, want)
		}
	}
}
