package manifest

import (
	"errors"
	"strings"
	"testing"
)

func TestUnknownFieldPolicy(t *testing.T) {
	warn := ParseOptions{UnknownFields: UnknownFieldsWarn}
	tests := []struct {
		name     string
		data     string
		warnings []string
		image    string
	}{
		{"probe typo", basePod + "    livenesProbe: {exec: {command: [x]}}\n", []string{"spec.containers[0].livenesProbe: unknown field, ignored"}, "busybox:1.36"},
		{"a field of a newer API", basePod + "  futureField: {a: 1}\n", []string{"spec.futureField: unknown field, ignored"}, "busybox:1.36"},
		// Keys match case-sensitively, as in the apiserver: the field is
		// dropped, not decoded into image.
		{"wrong case is dropped, not aliased", basePod + "    Image: evil\n", []string{"spec.containers[0].Image: unknown field, ignored"}, "busybox:1.36"},
		{"in a List item", "apiVersion: v1\nkind: List\nextra: 1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: web, bogus: 2}\n  spec: {containers: [{name: app, image: busybox:1.36}]}\n",
			[]string{"extra: unknown field, ignored", "items[0].metadata.bogus: unknown field, ignored"}, "busybox:1.36"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if pods, errs := ParseFile("/m/x.yaml", []byte(tt.data), node); len(pods) != 0 || len(errs) == 0 || !strings.Contains(joinErrs(errs), "unknown field") {
				t.Errorf("default policy: pods %v errors %v, want an unknown field error", pods, errs)
			}
			pods, errs := ParseFileOptions("/m/x.yaml", []byte(tt.data), node, warn)
			if len(errs) != 0 || len(pods) != 1 {
				t.Fatalf("warn policy: pods %v errors:\n%s", pods, joinErrs(errs))
			}
			p := pods[0]
			for _, w := range tt.warnings {
				found := false
				for _, got := range p.Warnings {
					found = found || got == w
				}
				if !found {
					t.Errorf("warnings %q, want %q", p.Warnings, w)
				}
			}
			if img := p.Pod.Spec.Containers[0].Image; img != tt.image {
				t.Errorf("image %q, want %q", img, tt.image)
			}
		})
	}

	// The UID covers what runs: the dropped field is not part of it.
	clean, _ := ParseFile("/m/x.yaml", []byte(basePod), node)
	typo, _ := ParseFileOptions("/m/x.yaml", []byte(basePod+"    livenesProbe: {}\n"), node, warn)
	if clean[0].Hash != typo[0].Hash {
		t.Errorf("an ignored field changed the UID")
	}

	// Objects' warnings go to Snapshot.Warnings.
	dir := t.TempDir()
	writeFile(t, dir+"/c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\nimmutible: true\n")
	s := LoadOptions(dir, node, warn)
	if len(s.Errors) != 0 || s.ConfigMaps["default/c"] == nil || len(s.Warnings) != 1 ||
		s.Warnings[0].Error() != dir+"/c.yaml:5: immutible: unknown field, ignored" || !errors.Is(s.Warnings[0], ErrIgnored) {
		t.Errorf("errors %v warnings %v configmaps %v", s.Errors, s.Warnings, s.ConfigMaps)
	}

	for _, tt := range []struct {
		in   string
		want UnknownFieldPolicy
		err  bool
	}{{"error", UnknownFieldsError, false}, {"warn", UnknownFieldsWarn, false}, {"", UnknownFieldsError, false}, {"ignore", 0, true}} {
		got, err := ParseUnknownFieldPolicy(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseUnknownFieldPolicy(%q) = %v, %v", tt.in, got, err)
		}
		if err == nil && tt.in != "" && got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
}

// A pod whose ConfigMap is not defined yet is accepted, with a warning: its
// containers wait for the object, as kubelet's do.
func TestMissingObjectWaits(t *testing.T) {
	dir := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: app\n    image: busybox\n" +
		"    env:\n    - name: A\n      valueFrom: {configMapKeyRef: {name: conf, key: a}}\n    envFrom: [{secretRef: {name: creds}}]\n"
	writeFile(t, dir+"/web.yaml", pod)
	s := Load(dir, node)
	if len(s.Errors) != 0 || len(s.Pods) != 1 || len(s.Warnings) != 2 {
		t.Fatalf("errors %v warnings %v pods %d, want the pod and 2 warnings", s.Errors, s.Warnings, len(s.Pods))
	}
	for _, w := range s.Warnings {
		if !errors.Is(w, ErrMissingObject) || errors.Is(w, ErrInvalid) {
			t.Errorf("warning %q does not wrap ErrMissingObject alone", w)
		}
	}
	writeSecretFile(t, dir+"/conf.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: x}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\n")
	if s := Load(dir, node); len(s.Errors) != 0 || len(s.Pods) != 1 || len(s.Warnings) != 0 {
		t.Errorf("with the objects: errors %v warnings %v pods %d", s.Errors, s.Warnings, len(s.Pods))
	}
}
