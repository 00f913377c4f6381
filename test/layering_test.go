// Package test holds the tree's layering test; everything test-only
// lives under this directory.
package test

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/podvisor/podvisor/"

// TestPackageDependencies holds the design's layering, from the import
// graph of every package of the module: the leaf packages (cni, mounts,
// probes, manifest, status) and the shared internal leaves import nothing
// of podvisor but internal leaves (status the manifest types); nothing
// below the daemon imports the API server; supervise reaches containerd
// only through the Runtime that supervise/containerd implements; mirror
// reads the status Store and never reaches into supervise; metrics reads
// the Store, the hooks' types and cgroups, never the API or supervise; the
// daemon is imported only by the CLI; the CLI talks to the daemon through
// the API's client, never reaching into supervise, containerd or the
// mirror; nothing outside test/ imports test/.
func TestPackageDependencies(t *testing.T) {
	tooling := func(p string) bool { return p == "test" || strings.HasPrefix(p, "test/") }
	leaves := map[string]bool{"cni": true, "mounts": true, "probes": true, "manifest": true, "manifest/podfile": true, "status": true}
	allowed := func(pkg, dep string) bool {
		internalLeaf := strings.HasPrefix(dep, "internal/")
		switch {
		case tooling(pkg):
			return true
		case tooling(dep):
			return false
		case strings.HasPrefix(pkg, "cmd/"):
			return true
		case dep == "daemon":
			return pkg == "cli"
		case leaves[pkg] || strings.HasPrefix(pkg, "internal/"):
			return internalLeaf || (pkg == "status" && dep == "manifest") || (pkg == "manifest" && dep == "manifest/podfile")
		case pkg == "api":
			return internalLeaf || dep == "status"
		case pkg == "mirror":
			return internalLeaf || dep == "status"
		case pkg == "metrics":
			return dep != "api" && dep != "supervise" && !strings.HasPrefix(dep, "supervise/")
		case pkg == "supervise":
			return dep != "api" && dep != "supervise/containerd"
		case pkg == "supervise/containerd":
			return dep != "api"
		case pkg == "cli" || strings.HasPrefix(pkg, "cli/"):
			return dep != "supervise" && !strings.HasPrefix(dep, "supervise/") && dep != "mirror" && dep != "metrics"
		}
		return true
	}
	root := ".."
	seen := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || d.Name() == "bin" {
			return filepath.SkipDir
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (test/controlplane/build)
			}
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if pkg == "." {
			t.Errorf("the module's root directory holds a Go package (%s); the command is cmd/podvisor", p.Name)
			return nil
		}
		seen++
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if ok && !allowed(pkg, dep) {
				t.Errorf("%s imports %s, which the layering forbids", pkg, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Fatalf("walked %d packages: not the module's tree", seen)
	}
}
