package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
)

// pathWithout is $PATH with every directory holding a program named
// name or name-* (containerd, containerd-shim-runc-v2, ...) replaced by a
// directory of links to everything else in it: the machine as if the
// package providing name were removed, and nothing else.
func pathWithout(t *testing.T, name string) string {
	t.Helper()
	var dirs []string
	for i, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			dirs = append(dirs, d)
			continue
		}
		has := func(e os.DirEntry) bool { return e.Name() == name || strings.HasPrefix(e.Name(), name+"-") }
		if !slices.ContainsFunc(entries, has) {
			dirs = append(dirs, d)
			continue
		}
		shadow := filepath.Join(t.TempDir(), "path", string(rune('a'+i%26)))
		if err := os.MkdirAll(shadow, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !has(e) {
				if err := os.Symlink(filepath.Join(d, e.Name()), filepath.Join(shadow, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		dirs = append(dirs, shadow)
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

// TestE2EWithoutContainerd runs the end-to-end package (test/e2e, its
// TestMain and TestWebPod) as `make test` runs it, with containerd removed
// from PATH: with $PODVISOR_E2E_REQUIRED set it must fail and name
// containerd; unset, as a developer's plain go test, TestWebPod skips
// naming it and the run passes.
func TestE2EWithoutContainerd(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		prereq.Missing(t, "the go command in PATH")
	}
	path := pathWithout(t, "containerd")
	run := func(required bool) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goBin, "test", "-count=1", "-v", "-run", "^TestWebPod$", ".")
		cmd.Dir = filepath.Join("..", "e2e")
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k != "PATH" && k != prereq.Env && k != EnvContainerd {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "PATH="+path)
		if required {
			cmd.Env = append(cmd.Env, prereq.Env+"=1")
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// The stripped PATH must really lack containerd, or nothing below
	// proves anything.
	for _, d := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(d, "containerd")); err == nil {
			t.Fatalf("containerd still in the stripped PATH, in %s", d)
		}
	}

	out, err := run(true)
	if err == nil {
		t.Errorf("with $%s set and no containerd, go test of test/e2e passed:\n%s", prereq.Env, out)
	}
	if !strings.Contains(out, "  - containerd (PATH or $"+EnvContainerd+")") || strings.Contains(out, "--- SKIP") {
		t.Errorf("with $%s set and no containerd, go test of test/e2e did not fail naming containerd before any test:\n%s", prereq.Env, out)
	}

	out, err = run(false)
	if err != nil {
		t.Errorf("without $%s, go test of test/e2e failed: %v\n%s", prereq.Env, err, out)
	}
	if !strings.Contains(out, "--- SKIP: TestWebPod") || !strings.Contains(out, "skipping: missing ") || !strings.Contains(out, "containerd (PATH") {
		t.Errorf("without $%s, TestWebPod did not skip naming containerd:\n%s", prereq.Env, out)
	}
}
