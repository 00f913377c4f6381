package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateCapPrefix: a capability named with the kernel's CAP_ prefix
// (which grants nothing under kubelet's CRI) is refused by podvisor
// validate, naming file, line, field and why.
func TestValidateCapPrefix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	os.WriteFile(path, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox\n"+
		"    securityContext:\n      capabilities:\n        add: [NET_ADMIN, CAP_SYS_ADMIN]\n"), 0o644)
	out, _, code := runCLI(t, "validate", path, "--node-name", "n1")
	want := path + `:11: spec.containers[0].securityContext.capabilities.add[1]: "CAP_SYS_ADMIN": capability names have no CAP_ prefix in Kubernetes (write "SYS_ADMIN")`
	if code != 1 || !strings.HasPrefix(out, want) {
		t.Fatalf("code %d, output %q\nwant it to start with %q", code, out, want)
	}
}
