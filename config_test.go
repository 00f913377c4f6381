package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestConfigKey(t *testing.T) {
	for flag, key := range map[string]string{
		"manifests":              "manifests",
		"container-log-max-size": "containerLogMaxSize",
		"node-ip":                "nodeIP",
		"pod-cidr":               "podCIDR",
		"client-ca-file":         "clientCAFile",
		"cni-conf-dir":           "cniConfDir",
		"tls-bind-address":       "tlsBindAddress",
	} {
		if got := configKey(flag); got != key {
			t.Errorf("configKey(%q) = %q, want %q", flag, got, key)
		}
	}
}

// Every run flag, whoever adds it, has a key of a type the file holds.
func TestConfigCoversRunFlags(t *testing.T) {
	seen := map[string]string{}
	for _, c := range configurables(runFlags()) {
		if c.kind == kindUnsupported {
			t.Errorf("--%s: a flag type the configuration file cannot hold (%T): teach kindOf it", c.name, c.flag)
		}
		if other, dup := seen[c.key]; dup {
			t.Errorf("--%s and --%s share the key %s", c.name, other, c.key)
		}
		seen[c.key] = c.name
	}
}

// configCLI runs podvisor with args and returns its output and error.
func configCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	app.ExitErrHandler = func(*cli.Context, error) {} // return the error, do not exit
	err := app.Run(reorderArgs(app, append([]string{"podvisor"}, args...)))
	return out.String(), err
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "podvisor.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const header = "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\n"

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unknown key", header + "manifests: /m\nnodename: x\n", ":4: nodename: unknown key (did you mean nodeName?)"},
		{"flag-style key", header + "node-name: x\n", ":3: node-name: unknown key (the flag --node-name is nodeName)"},
		{"string given a number", header + "containerdNamespace: 12\n", ":3: containerdNamespace: \"12\": want a string (quote it)"},
		{"int given a string", header + "containerLogMaxFiles: five\n", ":3: containerLogMaxFiles: \"five\": want an integer"},
		{"bool given a word", header + "embeddedContainerd: yes\n", ":3: embeddedContainerd: \"yes\": want a boolean"},
		{"bad duration", header + "relistPeriod: 10\n", ":3: relistPeriod: \"10\": want a duration"},
		{"mapping for a string", header + "manifests:\n  dir: /m\n", ":4: manifests: want a string"},
		{"wrong apiVersion", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: PodvisorConfiguration\n", ":1: apiVersion: \"kubelet.config.k8s.io/v1beta1\": want podvisor.io/v1alpha1"},
		{"wrong kind", "apiVersion: podvisor.io/v1alpha1\nkind: KubeletConfiguration\n", ":2: kind: \"KubeletConfiguration\": want PodvisorConfiguration"},
		{"no kind", "apiVersion: podvisor.io/v1alpha1\nmanifests: /m\n", ":1: kind: missing: want PodvisorConfiguration"},
		{"twice", header + "manifests: /a\nmanifests: /b\n", ":4: manifests: given twice (first on line 3)"},
		{"not a mapping", "- a\n", ":1: want a mapping"},
		{"not YAML", header + "manifests: [\n", ":3: not YAML: did not find expected node content"},
		{"two documents", header + "---\n" + header, ":3: more than one YAML document"},
		{"the config flag itself", header + "config: /x\n", ":3: config: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.file)
			_, err := parseConfig(p, []byte(tc.file), runFlags())
			if err == nil || !strings.Contains(err.Error(), p+tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, p+tc.want)
			}
			if !errors.Is(err, errConfig) {
				t.Errorf("%v does not unwrap to errConfig", err)
			}
			// Through the command: the same message, a usage error.
			if _, err := configCLI(t, "config", "view", "--config", p); err == nil || !strings.Contains(err.Error(), p+tc.want) {
				t.Fatalf("config view: err = %v", err)
			}
		})
	}
	if _, err := configCLI(t, "config", "view", "--config", filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "--config: open") {
		t.Errorf("missing file: err = %v", err)
	}
}

// The file sets what the command line does not; the command line wins;
// config view prints a file that --config reads back to the same view.
func TestConfigViewRoundTrip(t *testing.T) {
	p := writeFile(t, header+`
manifests: /srv/manifests
nodeName: edge-7
containerLogMaxSize: 2Mi
containerLogMaxFiles: 3
embeddedContainerd: true
relistPeriod: 1m30s
`)
	out, err := configCLI(t, "config", "view", "--config", p, "--node-name", "from-flag", "--log-level", "debug")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nmanifests: /srv/manifests\n", "\nnodeName: from-flag\n", "\ncontainerLogMaxSize: 2Mi\n", "\ncontainerLogMaxFiles: 3\n",
		"\nembeddedContainerd: true\n", "\nrelistPeriod: 1m30s\n", "\nlogLevel: debug\n",
		"\nstateDir: /var/lib/podvisor\n", "# --state-dir: persistent state\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config view lacks %q:\n%s", want, out)
		}
	}
	again, err := configCLI(t, "config", "view", "--config", writeFile(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if again != out {
		t.Fatalf("round trip changed the view:\n--- first\n%s\n--- second\n%s", out, again)
	}
	if _, err := configCLI(t, "config", "view", "stray"); err == nil {
		t.Error("config view took a positional argument")
	}
}

// TestReadmeConfigExample: the configuration file README.md shows is one
// podvisor accepts.
func TestReadmeConfigExample(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Configuration file\n")
	if !ok {
		t.Fatal("README.md has no Configuration file section")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md's Configuration file section has no yaml example")
	}
	if _, err := parseConfig("README.md", []byte(example), runFlags()); err != nil {
		t.Errorf("README.md's example configuration is refused: %v", err)
	}
}
