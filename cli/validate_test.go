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
