package manifest

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScanQuietForDocs: documentation, dotfiles, backups and JSON that is
// no Kubernetes object, beside the manifests, log nothing at Info; a
// .yaml or .json file that fails to parse, or a JSON object that looks
// like a manifest, is still a loud error, and a name that may be a
// misnamed manifest is still logged at Info.
func TestScanQuietForDocs(t *testing.T) {
	dir := t.TempDir()
	var logs logBuffer
	sc := newScanner(dir, node, slog.New(slog.NewTextHandler(&logs, nil))) // Info and above
	quiet := map[string]string{
		"README.md":      "# The web pod\n",
		"NOTES.txt":      "notes\n",
		"LICENSE":        "MIT\n",
		"doc.go":         "package examples\n",
		".editorconfig":  "root = true\n",
		"web.yaml~":      named("old"),
		"dashboard.json": `{"title": "podvisor", "panels": [{"targets": [{"expr": "podvisor_pods"}]}]}`,
		"list.json":      `[1, 2, 3]`,
	}
	for name, data := range quiet {
		writeFile(t, filepath.Join(dir, name), data)
	}
	loud := map[string]string{
		"broken.yaml":  "apiVersion: v1\nkind: Pod\nmetadata: {name: [\n",
		"broken.json":  `{"apiVersion": "v1", "kind": `,
		"nokind.json":  `{"apiVersion": "v1", "metadata": {"name": "x"}}`,
		"speconly.yml": "spec:\n  containers: []\n",
	}
	for name, data := range loud {
		writeFile(t, filepath.Join(dir, name), data)
	}
	writeFile(t, filepath.Join(dir, "web.yaml"), basePod)
	writeFile(t, filepath.Join(dir, "db.yaml.off"), named("db"))
	for _, sub := range []string{"images", ".git"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	snap, _ := rescan(sc)
	if !slices.Equal(keys(snap), []string{"default/web-node-1"}) {
		t.Errorf("pods %v, want only web", keys(snap))
	}
	var errFiles []string
	for _, e := range snap.Errors {
		errFiles = append(errFiles, filepath.Base(e.Path))
	}
	slices.Sort(errFiles)
	errFiles = slices.Compact(errFiles)
	if want := []string{"broken.json", "broken.yaml", "nokind.json", "speconly.yml"}; !slices.Equal(errFiles, want) {
		t.Errorf("errors in %v, want in %v: %v", errFiles, want, snap.Errors)
	}
	out := logs.String()
	for name := range quiet {
		if strings.Contains(out, name) {
			t.Errorf("%s logged at Info or above:\n%s", name, out)
		}
	}
	for name := range loud {
		if !strings.Contains(out, `level=WARN msg="manifest error" file=`+filepath.Join(dir, name)) {
			t.Errorf("%s: no manifest error logged:\n%s", name, out)
		}
	}
	if !strings.Contains(out, `level=INFO msg="skipping file in manifest directory" file=`+filepath.Join(dir, "db.yaml.off")) {
		t.Errorf("db.yaml.off, maybe a misnamed manifest, not logged at Info:\n%s", out)
	}
	if want := `level=INFO msg="skipping file in manifest directory" file=` + filepath.Join(dir, "images") + ` reason="directory (subdirectories are not read)"`; !strings.Contains(out, want) {
		t.Errorf("the sub-directory images not logged as one (%s):\n%s", want, out)
	}
	if strings.Contains(out, ".git") {
		t.Errorf(".git logged at Info or above:\n%s", out)
	}
}

// TestForeignJSONBecomesManifest: a JSON file that was no Kubernetes object
// and is rewritten into a pod runs; rewritten back, the pod goes.
func TestForeignJSONBecomesManifest(t *testing.T) {
	dir := t.TempDir()
	sc := newScanner(dir, node, slog.New(slog.DiscardHandler))
	p := filepath.Join(dir, "pod.json")
	writeFile(t, p, `{"title": "not yet"}`)
	if snap, _ := rescan(sc); len(snap.Pods) != 0 || len(snap.Errors) != 0 {
		t.Fatalf("foreign JSON: pods %v errors %v, want none", keys(snap), snap.Errors)
	}
	writeFile(t, p, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db"},"spec":{"containers":[{"name":"db","image":"busybox"}]}}`)
	if snap, _ := rescan(sc); !slices.Equal(keys(snap), []string{"default/db-node-1"}) {
		t.Fatalf("pod JSON: pods %v errors %v, want db", keys(snap), snap.Errors)
	}
	writeFile(t, p, `{"title": "again"}`)
	if snap, _ := rescan(sc); len(snap.Pods) != 0 || len(snap.Errors) != 0 {
		t.Fatalf("foreign again: pods %v errors %v, want none", keys(snap), snap.Errors)
	}
}

func TestForeignJSON(t *testing.T) {
	for _, tc := range []struct {
		path, data string
		want       bool
	}{
		{"a.json", `{"title": "x"}`, true},
		{"a.json", `[]`, true},
		{"a.json", `"text"`, true},
		{"a.json", `{"kind": "Pod"}`, false},
		{"a.json", `{"apiVersion": "v1"}`, false},
		{"a.json", `{"metadata": {}}`, false},
		{"a.json", `{"spec": {}}`, false},
		{"a.json", `{"items": []}`, false},
		{"a.json", `{"title": `, false},     // does not parse: an error, loudly
		{"a.json", "kind: Pod\n", false},    // YAML in a .json file: parsed as kubelet does
		{"a.yaml", `{"title": "x"}`, false}, // only .json files
	} {
		if got := foreignJSON(tc.path, []byte(tc.data)); got != tc.want {
			t.Errorf("foreignJSON(%s, %q) = %v, want %v", tc.path, tc.data, got, tc.want)
		}
	}
}

// TestManifestFixedLogged: a file whose errors go away is logged as fixed,
// at Info, once; a broken file that is removed is not "fixed".
func TestManifestFixedLogged(t *testing.T) {
	dir := t.TempDir()
	var logs logBuffer
	sc := newScanner(dir, node, slog.New(slog.NewTextHandler(&logs, nil)))
	p := filepath.Join(dir, "web.yaml")
	writeFile(t, p, basePod+"    stdin: true\n")
	writeFile(t, filepath.Join(dir, "gone.yaml"), named("gone")+"    stdin: true\n")
	rescan(sc)
	fixed := `level=INFO msg="manifest fixed" file=` + p + "\n"
	if out := logs.String(); !strings.Contains(out, `msg="manifest error" file=`+p) || strings.Contains(out, "manifest fixed") {
		t.Fatalf("broken: want an error and nothing fixed:\n%s", out)
	}
	writeFile(t, p, basePod)
	if err := os.Remove(filepath.Join(dir, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if snap, _ := rescan(sc); len(snap.Errors) != 0 {
			t.Fatalf("fixed: errors %v", snap.Errors)
		}
	}
	out := logs.String()
	if n := strings.Count(out, fixed); n != 1 {
		t.Errorf("%q logged %d times, want once:\n%s", fixed, n, out)
	}
	if strings.Contains(out, `msg="manifest fixed" file=`+filepath.Join(dir, "gone.yaml")) {
		t.Errorf("a removed file logged as fixed:\n%s", out)
	}
}
