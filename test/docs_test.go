package test

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs holds the style's rule that every package states its
// contract in a doc.go (Tailscale enforces package docs with a test too):
// each package of the module, test-only ones and commands included, has
// a doc.go with a non-empty package comment.
func TestPackageDocs(t *testing.T) {
	list := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}", "./...")
	list.Dir = ".." // the module root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(pkgs) < 20 {
		t.Fatalf("go list ./... lists %d packages, want the module's (more than 20):\n%s", len(pkgs), out)
	}
	for _, l := range pkgs {
		path, dir, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("go list line %q", l)
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments)
		switch {
		case err != nil:
			t.Errorf("%s: no doc.go with its contract: %v", path, err)
		case f.Doc == nil || strings.TrimSpace(f.Doc.Text()) == "":
			t.Errorf("%s: doc.go has no package comment", path)
		}
	}
}
