package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDrained(t *testing.T) {
	for _, tc := range []struct {
		synced bool
		pods   int
		want   bool
	}{
		{false, 0, false}, // a pod found at start may not be in the store yet
		{true, 2, false},
		{false, 1, false},
		{true, 0, true},
	} {
		if got := drained(func() bool { return tc.synced }, func() int { return tc.pods }); got != tc.want {
			t.Errorf("drained(synced=%v, pods=%d) = %v, want %v", tc.synced, tc.pods, got, tc.want)
		}
	}
}

// TestCheckDrainable: --exit-when-empty refuses a manifests dir with
// manifests in it (valid or not), naming one, and takes an empty or
// missing one, or one that holds only what is not a manifest.
func TestCheckDrainable(t *testing.T) {
	dir := t.TempDir()
	if err := checkDrainable(filepath.Join(dir, "missing"), "n"); err != nil {
		t.Errorf("missing dir: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("docs\n"), 0o644)
	if err := checkDrainable(dir, "n"); err != nil {
		t.Errorf("dir with docs only: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("kind: Pod\n"), 0o644)
	err := checkDrainable(dir, "n")
	if err == nil || !strings.Contains(err.Error(), "--exit-when-empty: the manifests dir "+dir+" holds manifests ("+bad+")") {
		t.Errorf("dir with a broken manifest: %v", err)
	}
	os.Remove(bad)
	web := filepath.Join(dir, "web.yaml")
	os.WriteFile(web, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: busybox}]\n"), 0o644)
	if err := checkDrainable(dir, "n"); err == nil || !strings.Contains(err.Error(), web) {
		t.Errorf("dir with a pod: %v", err)
	}
}
