package manifest

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	writeFile(t, p("web.yaml"), basePod)
	writeFile(t, p("web-copy.yaml"), basePod+"  hostname: copy\n")
	writeFile(t, p("bad.yaml"), basePod+"    livenesProbe: {}\n")
	writeFile(t, p("conf.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\n")
	writeFile(t, p("warn.yaml"), named("warn")+"  tolerations: [{operator: Exists}]\n")
	writeFile(t, p(".web.yaml.swp"), "junk")
	writeFile(t, p("web.yaml~"), basePod)

	tests := []struct {
		name     string
		paths    []string
		opts     ParseOptions
		valid    bool
		errors   []string // rendered, in order
		pods     []string
		warnings []string // substrings
	}{
		{
			name: "directory", paths: []string{dir}, valid: false,
			errors: []string{
				p("bad.yaml") + ":9: spec.containers[0].livenesProbe: unknown field",
				p("web.yaml") + ":4: metadata.name: pod default/web-node-1 is also defined in " + p("web-copy.yaml") + ", which is used; this one is ignored",
			},
			pods:     []string{"default/warn-node-1", "default/web-node-1"},
			warnings: []string{p("warn.yaml") + ":9: spec.tolerations: ignored by podvisor (scheduling only)"},
		},
		{
			name: "directory with unknown fields allowed", paths: []string{dir}, opts: ParseOptions{UnknownFields: UnknownFieldsWarn}, valid: false,
			errors: []string{
				p("web-copy.yaml") + ":4: metadata.name: pod default/web-node-1 is also defined in " + p("bad.yaml") + ", which is used; this one is ignored",
				p("web.yaml") + ":4: metadata.name: pod default/web-node-1 is also defined in " + p("bad.yaml"),
			},
			pods:     []string{"default/warn-node-1", "default/web-node-1"},
			warnings: []string{p("bad.yaml") + ":9: spec.containers[0].livenesProbe: unknown field, ignored"},
		},
		{name: "one good file", paths: []string{p("web.yaml")}, valid: true, pods: []string{"default/web-node-1"}},
		{
			name: "explicit files are checked together", paths: []string{p("web.yaml"), p("web-copy.yaml"), p("web.yaml")}, valid: false,
			errors: []string{p("web.yaml") + ":4: metadata.name: pod default/web-node-1 is also defined in " + p("web-copy.yaml")},
			pods:   []string{"default/web-node-1"},
		},
		{
			name: "a name the daemon ignores", paths: []string{p(".web.yaml.swp"), p("web.yaml~")}, valid: false,
			errors: []string{
				p(".web.yaml.swp") + ": not a manifest name (dotfile); podvisor would ignore this file",
				p("web.yaml~") + ": not a manifest name (editor backup file); podvisor would ignore this file",
			},
		},
		{name: "missing path", paths: []string{p("nope.yaml")}, valid: false, errors: []string{p("nope.yaml") + ": no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(tt.paths, node, tt.opts)
			if r.Valid() != tt.valid {
				t.Errorf("Valid() = %v", r.Valid())
			}
			var errs []string
			for _, e := range r.Errors {
				errs = append(errs, e.Error())
			}
			if len(errs) != len(tt.errors) {
				t.Fatalf("errors:\n%s\nwant %d", strings.Join(errs, "\n"), len(tt.errors))
			}
			for i, w := range tt.errors {
				if !strings.HasPrefix(errs[i], w) {
					t.Errorf("error %d:\n got %s\nwant %s", i, errs[i], w)
				}
			}
			var pods []string
			for _, p := range r.Pods {
				pods = append(pods, p.Key)
				if !uidRE.MatchString(p.UID) || !filepath.IsAbs(p.Path) {
					t.Errorf("pod %+v", p)
				}
			}
			if !slices.Equal(pods, tt.pods) {
				t.Errorf("pods %v, want %v", pods, tt.pods)
			}
			var warns []string
			for _, w := range r.Warnings {
				warns = append(warns, w.Error())
			}
			for _, w := range tt.warnings {
				if !slices.Contains(warns, w) {
					t.Errorf("warnings %q, want %q", warns, w)
				}
			}
		})
	}
	if r := Validate([]string{p("nope.yaml")}, node, ParseOptions{}); !errors.Is(r.Errors[0], fs.ErrNotExist) {
		t.Errorf("a missing path does not wrap fs.ErrNotExist")
	}
}

func TestValidateReportJSON(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "web.yaml"), basePod)
	writeFile(t, filepath.Join(dir, "bad.yaml"), basePod+"    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n")
	b, err := json.Marshal(Validate([]string{dir}, node, ParseOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Valid  bool
		Errors []map[string]any
		Pods   []map[string]any
		// Present even when empty, so tools need no null checks.
		Warnings   []any
		ConfigMaps []any
		Secrets    []any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"valid":false`, `"warnings":[]`, `"configMaps":[]`, `"secrets":[]`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b)
		}
	}
	if len(got.Errors) != 1 || len(got.Pods) != 1 {
		t.Fatalf("JSON:\n%s", b)
	}
	e := got.Errors[0]
	want := map[string]any{
		"path": filepath.Join(dir, "bad.yaml"), "line": float64(9), "field": "spec.containers[0].volumeDevices[0].name",
		"message": filepath.Join(dir, "bad.yaml") + ":9: spec.containers[0].volumeDevices[0].name: " + e["reason"].(string),
	}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("errors[0].%s = %v, want %v", k, e[k], v)
		}
	}
	pod := got.Pods[0]
	for _, k := range []string{"key", "uid", "path", "doc"} {
		if _, ok := pod[k]; !ok {
			t.Errorf("pods[0] lacks %q: %v", k, pod)
		}
	}
}

func TestLoadSkipsWhatValidateRejects(t *testing.T) {
	// The same names Validate calls "not a manifest name" are the ones the
	// daemon never reads.
	dir := t.TempDir()
	for _, name := range []string{".web.yaml", "web.yaml.orig", "1234"} {
		writeFile(t, filepath.Join(dir, name), basePod)
		if r := Validate([]string{filepath.Join(dir, name)}, node, ParseOptions{}); r.Valid() {
			t.Errorf("%s: valid", name)
		}
	}
	if s := Load(dir, node); len(s.Pods)+len(s.Errors) != 0 {
		t.Errorf("Load: %v %v", keys(s), s.Errors)
	}
}

// TestValidateReferencesAcrossPaths: references are checked across every
// path given: a pod in a directory may use a ConfigMap of a file named
// beside it; a missing object or key is a warning at the pod's file and
// line naming the field and what is missing, and leaves the report valid.
func TestValidateReferencesAcrossPaths(t *testing.T) {
	pods, objs := t.TempDir(), t.TempDir()
	writeFile(t, pods+"/web.yaml", basePod+"    env:\n    - name: A\n      valueFrom: {configMapKeyRef: {name: conf, key: a}}\n"+
		"    - name: B\n      valueFrom: {secretKeyRef: {name: creds, key: b}}\n")
	conf := objs + "/conf.yaml"
	writeSecretFile(t, conf, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: x}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {c: z}\n")

	alone := Validate([]string{pods}, node, ParseOptions{})
	if !alone.Valid() || len(alone.Warnings) != 2 ||
		!strings.HasPrefix(alone.Warnings[0].Error(), pods+"/web.yaml:11: spec.containers[0].env[0].valueFrom.configMapKeyRef.name: ConfigMap default/conf is not defined") {
		t.Errorf("pods alone: valid %v warnings %v", alone.Valid(), alone.Warnings)
	}
	both := Validate([]string{pods, conf}, node, ParseOptions{})
	want := `web.yaml:13: spec.containers[0].env[1].valueFrom.secretKeyRef: key "b" is not in Secret default/creds (` + conf + ":8)"
	if !both.Valid() || len(both.Warnings) != 1 || !strings.Contains(both.Warnings[0].Error(), want) || !errors.Is(both.Warnings[0], ErrMissingObject) {
		t.Errorf("with the objects: valid %v warnings %v, want one: %s", both.Valid(), both.Warnings, want)
	}
}
