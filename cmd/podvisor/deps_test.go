package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLeavesOutTheClientset: podvisor speaks to the apiserver through
// internal/kube, on five API groups. client-go's clientset (and what imports
// it: its certificate manager, discovery) registers every group and version
// of the API at package initialisation; linked in, it is most of the binary
// and megabytes of the resident set at rest (issue 19). A new import that
// brings it back fails here, naming the package.
func TestBinaryLeavesOutTheClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	banned := func(p string) bool {
		return p == "k8s.io/client-go/kubernetes" || strings.HasPrefix(p, "k8s.io/client-go/kubernetes/") ||
			p == "k8s.io/client-go/util/certificate" || strings.HasPrefix(p, "k8s.io/client-go/util/certificate/") ||
			p == "k8s.io/client-go/discovery"
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || banned(f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if banned(imp) {
				t.Errorf("%s imports %s", f[0], imp)
			}
		}
	}
}
