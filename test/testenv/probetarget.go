package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ProbeTargetPath is where the environment's image holds probetarget
// (test/probetarget), the target of probe tests.
const ProbeTargetPath = "/bin/probetarget"

// EnvProbeTarget names the environment variable that gives a probetarget
// binary to put in the image instead of building one: a static build, by
// absolute path (tests run in their package directory).
const EnvProbeTarget = "PODVISOR_TEST_PROBETARGET"

// probeTargetPkg is built when EnvProbeTarget is unset.
const probeTargetPkg = "github.com/podvisor/podvisor/test/probetarget"

// probeTarget returns the probetarget binary for the image: the one
// EnvProbeTarget names, or one built static into dir with the go command
// (the build cache makes that quick after the first time).
func probeTarget(dir string) (string, error) {
	if p := os.Getenv(EnvProbeTarget); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", EnvProbeTarget, err)
		}
		return p, nil
	}
	out := filepath.Join(dir, "probetarget")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, probeTargetPkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build probetarget (or set $%s): %w\n%s", EnvProbeTarget, err, b)
	}
	return out, nil
}
