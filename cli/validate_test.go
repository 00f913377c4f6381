package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateCommand: podvisor validate prints file:line: problems and
// exits non-zero on invalid input, zero on good input; -o json is a report.
func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	good := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
	bad := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n    image: busybox\n    livenesProbe: {}\n"
	os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte(good), 0o644)
	if out, _, code := runCLI(t, "validate", dir, "--node-name", "n1"); code != 0 || out != "" {
		t.Fatalf("good dir: code %d, output %q", code, out)
	}
	badPath := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badPath, []byte(bad), 0o644)
	out, _, code := runCLI(t, "validate", dir, "--node-name", "n1")
	if code != 1 || !strings.HasPrefix(out, badPath+":9: spec.containers[0].livenesProbe") {
		t.Fatalf("bad dir: code %d, output %q", code, out)
	}
	out, _, code = runCLI(t, "validate", "-o", "json", badPath, "--node-name", "n1")
	var report struct {
		Valid  bool `json:"valid"`
		Errors []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 1 || report.Valid || len(report.Errors) != 1 || report.Errors[0].Line != 9 {
		t.Fatalf("json: code %d err %v report %+v\n%s", code, err, report, out)
	}
	if _, _, code := runCLI(t, "validate", "--unknown-fields", "warn", badPath, "--node-name", "n1"); code != 0 {
		t.Fatalf("--unknown-fields=warn still rejects: code %d", code)
	}
}

// TestValidateReferences: references are checked across the paths given;
// a missing object or key is a warning naming file:line, field and what
// is missing, and validate still exits 0.
func TestValidateReferences(t *testing.T) {
	pods, objs := t.TempDir(), t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox\n" +
		"    env:\n    - name: A\n      valueFrom: {configMapKeyRef: {name: conf, key: a}}\n"
	os.WriteFile(filepath.Join(pods, "web.yaml"), []byte(pod), 0o644)
	conf := filepath.Join(objs, "conf.yaml")
	os.WriteFile(conf, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata: {b: x}\n"), 0o644)
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{[]string{pods}, "warning: " + filepath.Join(pods, "web.yaml") + ":11: spec.containers[0].env[0].valueFrom.configMapKeyRef.name: ConfigMap default/conf is not defined in the manifest directory"},
		{[]string{pods, conf}, "warning: " + filepath.Join(pods, "web.yaml") + `:11: spec.containers[0].env[0].valueFrom.configMapKeyRef: key "a" is not in ConfigMap default/conf (` + conf + ":4)"},
	} {
		out, _, code := runCLI(t, append([]string{"validate", "--node-name", "n1"}, tc.paths...)...)
		if code != 0 || !strings.HasPrefix(out, tc.want) || strings.Count(out, "\n") != 1 {
			t.Errorf("validate %v: exit %d, output %q, want one line starting %q", tc.paths, code, out, tc.want)
		}
	}
	os.WriteFile(conf, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata: {a: x}\n"), 0o644)
	if out, _, code := runCLI(t, "validate", "--node-name", "n1", pods, conf); code != 0 || out != "" {
		t.Errorf("validate with the key: exit %d, output %q", code, out)
	}
}

// TestValidateSecretFile: a manifest holding a Secret that others can read
// is a warning naming the chmod that fixes it (validate still exits 0); a
// Secret value is in no line validate prints, even when it is what is
// wrong.
func TestValidateSecretFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "creds.yaml")
	os.WriteFile(path, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pin: \"73195820\"}\n"), 0o644)
	os.Chmod(path, 0o644)
	out, _, code := runCLI(t, "validate", dir, "--node-name", "n1")
	if want := "warning: " + path + ": holds a Secret and is readable by its group and others (mode 0644): anyone who can read it has the Secret's values; fix with chmod 600 " + path + "\n"; code != 0 || out != want {
		t.Errorf("0644: code %d, output %q, want %q", code, out, want)
	}
	os.Chmod(path, 0o600)
	if out, _, code := runCLI(t, "validate", dir, "--node-name", "n1"); code != 0 || out != "" {
		t.Errorf("0600: code %d, output %q", code, out)
	}
	os.WriteFile(path, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pin: 73195820}\n"), 0o600)
	for _, args := range [][]string{{"validate", dir}, {"validate", "-o", "json", path}} {
		out, errOut, code := runCLI(t, append(args, "--node-name", "n1")...)
		if code != 1 || !strings.Contains(out, "stringData[pin]") || strings.Contains(out+errOut, "73195820") {
			t.Errorf("%v: code %d, output %q %q: want the error without the value", args, code, out, errOut)
		}
	}
}
