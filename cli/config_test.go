package cli

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/daemon"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "podvisor.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const header = "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\n"

// effectiveConfig is the Config podvisor run would run with, for args
// and stdin; its error output and exit code when it refuses.
func effectiveConfig(t *testing.T, stdin string, args ...string) (daemon.Config, string, int) {
	t.Helper()
	var got daemon.Config
	runDaemon = func(_ context.Context, c daemon.Config) error { got = c; return nil }
	t.Cleanup(func() { runDaemon = daemon.Run })
	_, errOut, code := runCLIIn(t, stdin, append([]string{"run"}, args...)...)
	return got, errOut, code
}

// TestConfigViewIsEffective: podvisor config view [flags] | podvisor run
// --config - (or through a file) runs with exactly the Config podvisor
// run [flags] does.
func TestConfigViewIsEffective(t *testing.T) {
	file := writeFile(t, header+"nodeName: from-file\nrelistPeriod: 1m\nlogDir: /srv/pods\n")
	for _, flags := range [][]string{
		nil,
		{"--log-dir", "/srv/logs"},          // no /var/log/containers links by default
		{"--container-log-links", ""},       // none, though the logs are /var/log/pods
		{"--container-log-links", "/links"}, // given
		{"--node-name", "Edge-7", "--relist-period", "1m30s", "--embedded-containerd", "--container-log-max-files", "3", "-v", "4"},
		{"--runtime-request-timeout", "0s", "--unknown-fields", "warn", "--node-ip", "192.0.2.7"},
		{"--config", file},
		{"--config", file, "--node-name", "from-flag", "--log-level", "warn", "-v", "9"},
	} {
		want, errOut, code := effectiveConfig(t, "", flags...)
		if code != 0 {
			t.Fatalf("run %q: exit %d: %s", flags, code, errOut)
		}
		view, errOut, code := runCLI(t, append([]string{"config", "view"}, flags...)...)
		if code != 0 {
			t.Fatalf("config view %q: exit %d: %s", flags, code, errOut)
		}
		viaStdin, errOut, code := effectiveConfig(t, view, "--config", "-")
		if code != 0 {
			t.Fatalf("run --config - with the view of %q: exit %d: %s\n%s", flags, code, errOut, view)
		}
		if !reflect.DeepEqual(viaStdin, want) {
			t.Errorf("flags %q:\nrun with them:  %+v\nrun --config -: %+v\nthe view:\n%s", flags, want, viaStdin, view)
		}
		viaFile, _, _ := effectiveConfig(t, "", "--config", writeFile(t, view))
		if !reflect.DeepEqual(viaFile, want) {
			t.Errorf("flags %q: run --config FILE: %+v, want %+v", flags, viaFile, want)
		}
	}
}

// TestConfigFileUnderFlags: the file sets what the command line does
// not; the command line wins; config view prints a file that --config
// reads back to the same view.
func TestConfigFileUnderFlags(t *testing.T) {
	p := writeFile(t, header+`
manifests: /srv/manifests
nodeName: edge-7
containerLogMaxSize: 2Mi
containerLogMaxFiles: 3
embeddedContainerd: true
relistPeriod: 1m30s
`)
	out, errOut, code := runCLI(t, "config", "view", "--config", p, "--node-name", "from-flag", "--log-level", "debug")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, want := range []string{
		"\nmanifests: /srv/manifests\n", "\nnodeName: from-flag\n", "\ncontainerLogMaxSize: 2Mi\n", "\ncontainerLogMaxFiles: 3\n",
		"\nembeddedContainerd: true\n", "\nrelistPeriod: 1m30s\n", "\nlogLevel: debug\n",
		"\nstateDir: /var/lib/podvisor\n", "# --state-dir: persistent state\n",
		"\ncontainerLogLinks: /var/log/containers\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config view lacks %q:\n%s", want, out)
		}
	}
	again, errOut, code := runCLI(t, "config", "view", "--config", writeFile(t, out))
	if code != 0 {
		t.Fatal(errOut)
	}
	if again != out {
		t.Fatalf("round trip changed the view:\n--- first\n%s\n--- second\n%s", out, again)
	}
	t.Setenv("PODVISOR_CONFIG", p)
	if out, _, _ := runCLI(t, "config", "view"); !strings.Contains(out, "\nmanifests: /srv/manifests\n") {
		t.Errorf("$PODVISOR_CONFIG not read:\n%s", out)
	}
	os.Unsetenv("PODVISOR_CONFIG")
	if _, errOut, code := runCLI(t, "config", "view", "stray"); code != 2 || !strings.Contains(errOut, `unexpected argument "stray"`) {
		t.Errorf("config view took a positional argument: exit %d, %s", code, errOut)
	}
}

// TestRefusedAtStart: each bad value is refused before the daemon
// starts, naming the flag (or the file's line and key) and why, as a
// usage error.
func TestRefusedAtStart(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"--relist-period", "-5s"}, "", "--relist-period: -5s: must be more than 0"},
		{[]string{"--relist-period", "0s"}, "", "--relist-period: 0s: must be more than 0"},
		{[]string{"--manifest-relist-period", "0s"}, "", "--manifest-relist-period: 0s: must be more than 0"},
		{[]string{"--node-ip", "999.1.1.1"}, "", `--node-ip: "999.1.1.1" is not an IP address`},
		{[]string{"--node-name", "Edge_7!"}, "", `--node-name: "Edge_7!": not a valid node name`},
		{[]string{"--pod-cidr", "10.0.0.0/33"}, "", `--pod-cidr: "10.0.0.0/33" is not a subnet`},
		{[]string{"--container-log-max-size", "0"}, "", `--container-log-max-size: "0": the size must be positive`},
		{[]string{"--config", "-"}, header + "relistPeriod: -5s\n", "<stdin>:3: relistPeriod: -5s: must be more than 0"},
		{[]string{"--config", "-"}, header + "nodeName: Edge_7!\n", `<stdin>:3: nodeName: "Edge_7!": not a valid node name`},
		{[]string{"--config", "-"}, header + "podCIDR: 10.0.0.0/33\n", `<stdin>:3: podCIDR: "10.0.0.0/33" is not a subnet`},
		{[]string{"--config", "-"}, header + "nodename: x\n", "<stdin>:3: nodename: unknown key (did you mean nodeName?)"},
		{[]string{"--config", "-"}, header + "socket: /x\n", "<stdin>:3: socket: unknown key"},
		{[]string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, "", "--config: open"},
		{[]string{"--log-level", "loud"}, "", `--log-level: "loud"`},
		{[]string{"extra"}, "", `unexpected argument "extra"`},
	} {
		started := false
		runDaemon = func(context.Context, daemon.Config) error { started = true; return nil }
		// The real daemon.Run validates too: it must refuse before starting.
		_, errOut, code := runCLIIn(t, tc.stdin, append([]string{"run"}, tc.args...)...)
		if started || code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("run %q: started %v, exit %d, stderr %q; want exit 2 and %q", tc.args, started, code, errOut, tc.want)
		}
	}
	runDaemon = daemon.Run
	// daemon.Run refuses on its own too, before creating anything.
	c := daemon.Default()
	c.RelistPeriod = -5e9
	c.StateDir = filepath.Join(t.TempDir(), "state")
	if err := daemon.Run(t.Context(), c); ExitCode(err) != 2 || !strings.Contains(err.Error(), "--relist-period") {
		t.Errorf("daemon.Run with a negative relist period: %v", err)
	}
	if _, err := os.Stat(c.StateDir); err == nil {
		t.Error("daemon.Run created the state dir before refusing")
	}
}

// TestVerbosity: -v 4 or more is --log-level debug for run, unless
// --log-level is given; --version is the version.
func TestVerbosity(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "info"},
		{[]string{"-v", "2"}, "info"},
		{[]string{"-v", "4"}, "debug"},
		{[]string{"--v=6"}, "debug"},
		{[]string{"-v", "9", "--log-level", "warn"}, "warn"},
	} {
		c, errOut, code := effectiveConfig(t, "", tc.args...)
		if code != 0 || c.LogLevel != tc.want {
			t.Errorf("run %q: log level %q (exit %d, %s), want %q", tc.args, c.LogLevel, code, errOut, tc.want)
		}
	}
	out, _, code := runCLI(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "podvisor version ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}
