package main

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/podvisor/podvisor/"

// TestPackageDependencies holds the design's layering: the leaf packages
// (cni, mounts, probes, manifest, manifest/podfile, status) and the shared
// internal leaves import nothing of podvisor but internal leaves (status the
// manifest types, manifest its decoder podfile); nothing below main imports the API server; supervise reaches
// containerd only through the Runtime that supervise/containerd implements;
// mirror reads the status Store and never reaches into supervise; metrics
// reads the Store, the hooks' types and cgroups, never the API or supervise.
func TestPackageDependencies(t *testing.T) {
	tooling := func(p string) bool { return p == "test" || strings.HasPrefix(p, "test/") }
	leaves := map[string]bool{"cni": true, "mounts": true, "probes": true, "manifest": true, "manifest/podfile": true, "status": true}
	allowed := func(pkg, dep string) bool {
		internalLeaf := strings.HasPrefix(dep, "internal/") && !tooling(dep)
		switch {
		case tooling(pkg) || pkg == "" || strings.HasPrefix(pkg, "cmd/"):
			return true
		case leaves[pkg] || (strings.HasPrefix(pkg, "internal/") && !tooling(pkg)):
			return internalLeaf || (pkg == "status" && dep == "manifest") || (pkg == "manifest" && dep == "manifest/podfile")
		case pkg == "api":
			return internalLeaf || dep == "status"
		case pkg == "mirror":
			return internalLeaf || dep == "status"
		case pkg == "metrics":
			return dep != "api" && dep != "supervise" && !strings.HasPrefix(dep, "supervise/") && !tooling(dep)
		case pkg == "supervise":
			return dep != "api" && dep != "supervise/containerd" && !tooling(dep)
		case pkg == "supervise/containerd":
			return dep != "api" && !tooling(dep)
		}
		return !tooling(dep)
	}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata" || d.Name() == "bin" {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		pkg := filepath.ToSlash(path)
		if pkg == "." {
			pkg = ""
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if ok && !allowed(pkg, dep) {
				t.Errorf("%s imports %s, which the layering forbids", path, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
