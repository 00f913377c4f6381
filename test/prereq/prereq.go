package prereq

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env names the environment variable that turns a missing prerequisite
// from a skip into a failure. Any value but empty and "0" sets it.
const Env = "PODVISOR_E2E_REQUIRED"

// Required reports whether $PODVISOR_E2E_REQUIRED is set.
func Required() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Missing stops t because what it needs is missing: a failure naming it
// when Required, a skip otherwise. what reads after "missing", e.g. "root
// (to make namespaces)" or "containerd (PATH or $PODVISOR_TEST_CONTAINERD)".
func Missing(t testing.TB, what string) {
	t.Helper()
	if Required() {
		t.Fatalf("missing %s; $%s is set, so a missing prerequisite fails the test instead of skipping it", what, Env)
	}
	t.Skipf("skipping: missing %s", what)
}

// Root stops t, as Missing does, unless the test runs as root; why says
// what root is needed for.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "root ("+why+")")
	}
}

// CNIPlugins returns the plugins among names found in none of dirs, in the
// order given, each as "name in dir1 or dir2".
func CNIPlugins(dirs []string, names ...string) []string {
	var missing []string
	for _, n := range names {
		found := false
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, n)); err == nil {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, "CNI plugin "+n+" in "+strings.Join(dirs, " or "))
		}
	}
	return missing
}

// Exit is for a TestMain that checked its environment once and found
// missing (non-empty): when Required, it writes the list to w and exits
// the test binary with status 1; otherwise it returns, and the tests skip
// through Missing.
func Exit(w io.Writer, missing []string) {
	if len(missing) == 0 || !Required() {
		return
	}
	fmt.Fprintf(w, "end-to-end test environment incomplete ($%s is set), missing:\n", Env)
	for _, m := range missing {
		fmt.Fprintf(w, "  - %s\n", m)
	}
	exit(1)
}

// exit is os.Exit; the test replaces it.
var exit = os.Exit
