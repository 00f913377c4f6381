package testenv

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
	"github.com/podvisor/podvisor/test/testimage"
)

// CNIPlugins are the CNI plugins an Env's network and podvisor use:
// bridge, host-local and portmap in the Env's conflist, loopback for
// every pod's lo.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// Missing lists what an Env needs and this machine lacks, each named as a
// user would install it: root, containerd, runc, the CNIPlugins, a static
// busybox. Empty, an Env can run here.
func Missing() []string {
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
	missing = append(missing, prereq.CNIPlugins(cniBinDirs, CNIPlugins...)...)
	if _, err := os.Stat(testimage.DefaultBusyboxPath); err != nil {
		missing = append(missing, testimage.DefaultBusyboxPath+" (busybox-static)")
	}
	return missing
}

// Available reports why an Env cannot run here, or nil when it can: the
// list Missing makes. TestMain uses it to decide whether to Start.
func Available() error {
	if m := Missing(); len(m) > 0 {
		return errors.New("containerd test environment unavailable, missing: " + strings.Join(m, ", "))
	}
	return nil
}

// RequireRoot stops the test through prereq.Missing when Missing lists
// anything: a skip for a plain go test, a failure naming what is missing
// when $PODVISOR_E2E_REQUIRED is set.
func RequireRoot(t testing.TB) {
	t.Helper()
	if m := Missing(); len(m) > 0 {
		prereq.Missing(t, strings.Join(m, ", "))
	}
}
