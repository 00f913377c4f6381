package cli

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmePackages is what README's package map names, in order: each
// top-level bullet's leading **`p`** is package p (or, as `internal/`,
// only a directory), and every further **`q`** in that bullet is p/q.
func readmePackages(t *testing.T, readme string) []string {
	t.Helper()
	const begin, end = "<!-- packages:begin -->\n", "<!-- packages:end -->"
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatal("README.md has no packages:begin/end markers around its package map")
	}
	bold := regexp.MustCompile("\\*\\*`([^`]+)`\\*\\*")
	var names []string
	for n, item := range strings.Split("\n"+readme[i+len(begin):j], "\n- ")[1:] {
		m := bold.FindAllStringSubmatch(item, -1)
		if len(m) == 0 || !strings.HasPrefix(item, m[0][0]) {
			t.Errorf("package map's bullet %d does not start with a **`package`**: %.60q", n+1, item)
			continue
		}
		head := m[0][1]
		if !strings.HasSuffix(head, "/") {
			names = append(names, head)
		}
		for _, sub := range m[1:] {
			names = append(names, strings.TrimSuffix(head, "/")+"/"+sub[1])
		}
	}
	return names
}

// TestReadmePackageMap: README's package map names every package of `go
// list ./...` and nothing else, each once, so that the map cannot drift
// from the tree.
func TestReadmePackageMap(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	named := readmePackages(t, string(b))
	list := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	list.Dir = ".." // the module root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var tree []string
	const module = "github.com/podvisor/podvisor"
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, module+"/")
		if !ok {
			t.Fatalf("go list ./... lists %s, outside %s", p, module)
		}
		tree = append(tree, rel)
	}
	if len(tree) < 20 {
		t.Fatalf("go list ./... lists %d packages, want the module's:\n%s", len(tree), out)
	}
	for _, p := range tree {
		if !slices.Contains(named, p) {
			t.Errorf("package %s is not in README.md's package map", p)
		}
	}
	seen := map[string]bool{}
	for _, p := range named {
		if !slices.Contains(tree, p) {
			t.Errorf("README.md's package map names %s, which go list ./... does not list", p)
		}
		if seen[p] {
			t.Errorf("README.md's package map names %s twice", p)
		}
		seen[p] = true
	}
}
