package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reflect"
	"slices"
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
		if got := ConfigKey(flag); got != key {
			t.Errorf("ConfigKey(%q) = %q, want %q", flag, got, key)
		}
	}
}

// Every run flag, whoever adds it, has a key of a type the file holds,
// and the Config field it sets has that key as its yaml key.
func TestConfigCoversRunFlags(t *testing.T) {
	c := Default()
	seen := map[string]string{}
	var keys []string
	for _, f := range configurables(runFlagSet(&c)) {
		if f.kind == kindUnsupported {
			t.Errorf("--%s: a flag type the configuration file cannot hold (%s): teach kindOf it", f.name, f.flag.Value.Type())
		}
		if other, dup := seen[f.key]; dup {
			t.Errorf("--%s and --%s share the key %s", f.name, other, f.key)
		}
		seen[f.key] = f.name
		keys = append(keys, f.key)
	}
	var tags []string
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		if tag := ct.Field(i).Tag.Get("yaml"); sectionOf(tag) == nil {
			tags = append(tags, tag)
		}
	}
	if !slices.Equal(tags, keys) {
		t.Errorf("Config's yaml keys, in order:\n%q\nthe flags' keys:\n%q", tags, keys)
	}
	// Each flag sets the field of its key.
	for _, f := range configurables(runFlagSet(&c)) {
		probe := Default()
		fs := runFlagSet(&probe)
		v := map[valueKind]string{kindString: "x", kindBool: "true", kindInt: "7", kindDuration: "7s", kindPeriods: "7=7s"}[f.kind]
		if f.kind == kindBool && f.flag.DefValue == "true" {
			v = "false" // a flag on by default (--rotate-certificates)
		}
		if err := fs.Set(f.name, v); err != nil {
			t.Fatal(err)
		}
		pv, dv := reflect.ValueOf(probe), reflect.ValueOf(Default())
		for i := range ct.NumField() {
			changed := !reflect.DeepEqual(pv.Field(i).Interface(), dv.Field(i).Interface())
			if changed != (ct.Field(i).Tag.Get("yaml") == f.key) {
				t.Errorf("--%s (key %s) changed field %s: %v", f.name, f.key, ct.Field(i).Name, changed)
			}
		}
	}
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
		{"negative relist", header + "manifests: /m\nrelistPeriod: -5s\n", ":4: relistPeriod: -5s: must be more than 0"},
		{"zero relist", header + "relistPeriod: 0s\n", ":3: relistPeriod: 0s: must be more than 0"},
		{"zero manifest relist", header + "manifestRelistPeriod: 0s\n", ":3: manifestRelistPeriod: 0s: must be more than 0"},
		{"node name", header + "nodeName: Edge_7!\n", `:3: nodeName: "Edge_7!": not a valid node name`},
		{"node IP", header + "nodeIP: 999.1.1.1\n", `:3: nodeIP: "999.1.1.1" is not an IP address`},
		{"pod CIDR", header + "podCIDR: 10.0.0.0/33\n", `:3: podCIDR: "10.0.0.0/33" is not a subnet`},
		{"log size", header + "containerLogMaxSize: \"0\"\n", `:3: containerLogMaxSize: "0": the size must be positive`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.file)
			c := Default()
			err := ReadConfig(p, []byte(tc.file), &c)
			if err == nil || !strings.Contains(err.Error(), p+tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, p+tc.want)
			}
			if !errors.Is(err, ErrConfig) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not unwrap to ErrConfig and ErrInvalid", err)
			}
		})
	}
}

// TestReadmeConfigExample: the configuration file README.md shows is one
// podvisor accepts.
func TestReadmeConfigExample(t *testing.T) {
	b, err := os.ReadFile("../README.md")
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
	c := Default()
	if err := ReadConfig("README.md", []byte(example), &c); err != nil {
		t.Errorf("README.md's example configuration is refused: %v", err)
	}
}
