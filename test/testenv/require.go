package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/test/testimage"
)

// Available reports why an Env cannot run here, or nil when it can: it
// needs root, containerd, runc, the CNI bridge plugin and a static busybox.
// TestMain uses it to decide whether to Start.
func Available() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	if _, _, err := findContainerd(); err != nil {
		missing = append(missing, "containerd (PATH or $"+EnvContainerd+")")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc in PATH")
	}
	bridge := false
	for _, d := range existingDirs(cniBinDirs) {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			bridge = true
		}
	}
	if !bridge {
		missing = append(missing, "CNI bridge plugin in "+strings.Join(cniBinDirs, " or "))
	}
	if _, err := os.Stat(testimage.DefaultBusyboxPath); err != nil {
		missing = append(missing, testimage.DefaultBusyboxPath+" (busybox-static)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("containerd test environment unavailable, missing: %s", strings.Join(missing, ", "))
	}
	return nil
}

// RequireRoot skips the test with the reason when Available fails: not
// root, or containerd, runc, the CNI bridge plugin or /bin/busybox missing.
func RequireRoot(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip("skipping: ", err)
	}
}
