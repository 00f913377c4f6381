package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateConfig: podvisor validate --config checks the pods against
// the node's configuration file: a runtimeClassName it has no class of is
// a warning at the field's line (the files stay valid), one it has is
// quiet, and the file's nodeName names the pods.
func TestValidateConfig(t *testing.T) {
	t.Setenv("PODVISOR_CONFIG", "")
	dir := t.TempDir()
	pod := func(name, class string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  runtimeClassName: " + class + "\n  containers:\n  - name: c\n    image: busybox\n"
	}
	manifests := filepath.Join(dir, "manifests")
	os.Mkdir(manifests, 0o755)
	os.WriteFile(filepath.Join(manifests, "crun.yaml"), []byte(pod("fast", "crun")), 0o644)
	kata := filepath.Join(manifests, "kata.yaml")
	os.WriteFile(kata, []byte(pod("vm", "kata")), 0o644)
	config := filepath.Join(dir, "podvisor.yaml")
	os.WriteFile(config, []byte("apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nnodeName: edge-7\nruntimeClasses:\n  crun:\n    options: {BinaryName: crun}\n"), 0o644)

	warning := kata + `:6: spec.runtimeClassName: runtime class "kata" is not configured on this node (runtimeClasses.kata)`
	out, errOut, code := runCLI(t, "validate", "--config", config, manifests)
	if code != 0 || strings.Count(out, "spec.runtimeClassName") != 1 || !strings.Contains(out, "warning: "+warning) {
		t.Errorf("--config: exit %d, want the one warning %q:\n%s%s", code, warning, out, errOut)
	}
	if !strings.Contains(errOut, "ok: pod default/fast-edge-7 ") {
		t.Errorf("the configuration's nodeName does not name the pods:\n%s", errOut)
	}

	// Without a configuration, no class is configured.
	out, _, code = runCLI(t, "validate", "--node-name", "n1", manifests)
	if code != 0 || strings.Count(out, "spec.runtimeClassName") != 2 {
		t.Errorf("no --config: exit %d, want both classes warned about:\n%s", code, out)
	}
	// $PODVISOR_CONFIG is --config's default.
	t.Setenv("PODVISOR_CONFIG", config)
	out, _, _ = runCLI(t, "validate", "-o", "json", manifests)
	var report struct {
		Warnings []struct {
			Line  int    `json:"line"`
			Field string `json:"field"`
		} `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || len(report.Warnings) != 1 || report.Warnings[0].Line != 6 || report.Warnings[0].Field != "spec.runtimeClassName" {
		t.Errorf("json with $PODVISOR_CONFIG: %v %+v\n%s", err, report, out)
	}
	// A $PODVISOR_CONFIG that does not exist is a note; a --config, an error.
	t.Setenv("PODVISOR_CONFIG", filepath.Join(dir, "none.yaml"))
	_, errOut, code = runCLI(t, "validate", "--node-name", "n1", manifests)
	if code != 0 || !strings.Contains(errOut, "note: $PODVISOR_CONFIG names "+filepath.Join(dir, "none.yaml")+", which does not exist") {
		t.Errorf("missing $PODVISOR_CONFIG: exit %d:\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "validate", "--config", filepath.Join(dir, "none.yaml"), manifests)
	if code == 0 || !strings.Contains(errOut, "none.yaml") {
		t.Errorf("missing --config: exit %d:\n%s", code, errOut)
	}
	// A bad configuration is named by its line.
	os.WriteFile(config, []byte("apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nruntimeClasses:\n  crun:\n    options: {SystemdCgroup: true}\n"), 0o644)
	_, errOut, code = runCLI(t, "validate", "--config", config, manifests)
	if code == 0 || !strings.Contains(errOut, config+":5: runtimeClasses.crun.options.SystemdCgroup: true is not supported") {
		t.Errorf("bad --config: exit %d:\n%s", code, errOut)
	}
}
