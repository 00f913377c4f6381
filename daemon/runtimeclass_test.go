package daemon

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	v1 "k8s.io/api/core/v1"
)

func TestRuntimeClassesRead(t *testing.T) {
	file := header + `runtimeClasses:
  crun:
    options:
      BinaryName: /usr/bin/crun
      Root: /run/crun-podvisor
  runc-nopivot:
    runtimeType: io.containerd.runc.v2
    options: {NoPivotRoot: true, NoNewKeyring: true, SystemdCgroup: false}
  plain: {}
  empty:
  gvisor:
    runtimeType: io.containerd.runsc.v1
    options:
      TypeUrl: io.containerd.runsc.v1.options
      ConfigPath: /etc/containerd/runsc.toml
`
	c := Default()
	if err := ReadConfig("podvisor.yaml", []byte(file), &c); err != nil {
		t.Fatal(err)
	}
	want := map[string]ctrd.RuntimeClass{
		"crun":         {BinaryName: "/usr/bin/crun", Root: "/run/crun-podvisor"},
		"runc-nopivot": {Type: "io.containerd.runc.v2", NoPivotRoot: true, NoNewKeyring: true},
		"plain":        {},
		"empty":        {},
		"gvisor":       {Type: "io.containerd.runsc.v1", TypeURL: "io.containerd.runsc.v1.options", ConfigPath: "/etc/containerd/runsc.toml"},
	}
	if !reflect.DeepEqual(c.RuntimeClasses, want) {
		t.Errorf("runtime classes:\n%+v\nwant\n%+v", c.RuntimeClasses, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	// config view writes them back as the file reads them.
	var buf bytes.Buffer
	if err := WriteConfig(&buf, c); err != nil {
		t.Fatal(err)
	}
	back := Default()
	if err := ReadConfig("view.yaml", buf.Bytes(), &back); err != nil {
		t.Fatalf("config view's output is refused: %v\n%s", err, buf.String())
	}
	for name, rc := range want {
		if rc.Type == "" {
			rc.Type = ctrd.DefaultRuntimeType // written out
			want[name] = rc
		}
	}
	if !reflect.DeepEqual(back.RuntimeClasses, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v\n%s", back.RuntimeClasses, want, buf.String())
	}
	if !strings.Contains(buf.String(), "# runtimeClasses: runtime classes by name") {
		t.Errorf("config view does not explain runtimeClasses:\n%s", buf.String())
	}
}

func TestRuntimeClassesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"not a mapping", header + "runtimeClasses: [crun]\n", ":3: runtimeClasses: want a mapping of runtime class names"},
		{"bad class name", header + "runtimeClasses:\n  Crun_1: {}\n", `:4: runtimeClasses.Crun_1: "Crun_1": not a valid runtime class name`},
		{"class not a mapping", header + "runtimeClasses:\n  crun: /usr/bin/crun\n", ":4: runtimeClasses.crun: want a mapping with runtimeType and options"},
		{"unknown class key", header + "runtimeClasses:\n  crun:\n    handler: crun\n", ":5: runtimeClasses.crun.handler: unknown key (want runtimeType, options, baseRuntimeSpec)"},
		{"containerd's key", header + "runtimeClasses:\n  crun:\n    runtime_type: io.containerd.runc.v2\n", ":5: runtimeClasses.crun.runtime_type: unknown key"},
		{"bad runtime type", header + "runtimeClasses:\n  crun:\n    runtimeType: crun\n", `:5: runtimeClasses.crun.runtimeType: "crun": not a containerd runtime type`},
		{"runtime type not a string", header + "runtimeClasses:\n  crun:\n    runtimeType: 2\n", ":5: runtimeClasses.crun.runtimeType: want a string"},
		{"unknown option", header + "runtimeClasses:\n  crun:\n    options:\n      Binary: crun\n", ":6: runtimeClasses.crun.options.Binary: unknown option of io.containerd.runc.v2 (want BinaryName, Root, NoPivotRoot, NoNewKeyring, SystemdCgroup)"},
		{"unsupported option", header + "runtimeClasses:\n  crun:\n    options:\n      ShimCgroup: /x\n", ":6: runtimeClasses.crun.options.ShimCgroup: not supported: podvisor leaves the shims"},
		{"systemd cgroup", header + "runtimeClasses:\n  crun:\n    options:\n      SystemdCgroup: true\n", ":6: runtimeClasses.crun.options.SystemdCgroup: true is not supported: podvisor places containers in its own cgroups by path"},
		{"bool option given a string", header + "runtimeClasses:\n  crun:\n    options:\n      NoPivotRoot: \"yes\"\n", `:6: runtimeClasses.crun.options.NoPivotRoot: "yes": want a boolean`},
		{"empty binary", header + "runtimeClasses:\n  crun:\n    options:\n      BinaryName: \"\"\n", ":6: runtimeClasses.crun.options.BinaryName: want a non-empty string"},
		{"relative binary path", header + "runtimeClasses:\n  crun:\n    options:\n      BinaryName: bin/crun\n", `:4: runtimeClasses.crun: BinaryName "bin/crun": want a name looked up in containerd's PATH or an absolute path`},
		{"relative root", header + "runtimeClasses:\n  crun:\n    options:\n      Root: run/crun\n", `:4: runtimeClasses.crun: Root "run/crun": want an absolute directory`},
		{"runc option of another type", header + "runtimeClasses:\n  kata:\n    runtimeType: io.containerd.kata.v2\n    options:\n      BinaryName: kata\n", ":7: runtimeClasses.kata.options.BinaryName: unknown option of io.containerd.kata.v2 (want TypeUrl, ConfigPath)"},
		{"another type's option for runc", header + "runtimeClasses:\n  crun:\n    options:\n      ConfigPath: /etc/crun.toml\n", ":6: runtimeClasses.crun.options.ConfigPath: unknown option of io.containerd.runc.v2"},
		{"option twice", header + "runtimeClasses:\n  crun:\n    options:\n      BinaryName: crun\n      BinaryName: runc\n", ":7: runtimeClasses.crun.options.BinaryName: given twice"},
		{"section twice", header + "runtimeClasses: {}\nruntimeClasses: {}\n", ":4: runtimeClasses: given twice (first on line 3)"},
		{"misspelt section", header + "runtimeclasses: {}\n", ":3: runtimeclasses: unknown key (did you mean runtimeClasses?)"},
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

// TestRuntimeClassesValidate: classes given other than through the file
// are checked too.
func TestRuntimeClassesValidate(t *testing.T) {
	c := Default()
	c.RuntimeClasses = map[string]ctrd.RuntimeClass{"crun": {BinaryName: "bin/crun"}, "x_y": {}}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted a relative BinaryName and a bad class name")
	}
	for _, want := range []string{`runtimeClasses.crun: BinaryName "bin/crun"`, `runtimeClasses.x_y: "x_y": not a valid runtime class name`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to hold %q", err, want)
		}
	}
}

func TestLookupRuntimeClass(t *testing.T) {
	c := Default()
	c.RuntimeClasses = map[string]ctrd.RuntimeClass{"crun": {BinaryName: "crun"}}
	if err := c.lookupRuntimeClass("crun"); err != nil {
		t.Errorf("crun: %v", err)
	}
	err := c.lookupRuntimeClass("gvisor")
	want := `runtimeclasses.node.k8s.io "gvisor" not found: podvisor's configuration has no runtimeClasses.gvisor`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("gvisor: %v, want %q...", err, want)
	}
}

func TestNodeWarnings(t *testing.T) {
	c := Default()
	c.RuntimeClasses = map[string]ctrd.RuntimeClass{"crun": {BinaryName: "crun"}}
	pod := func(class string) *v1.Pod {
		p := &v1.Pod{}
		if class != "-" {
			p.Spec.RuntimeClassName = &class
		}
		return p
	}
	for _, tc := range []struct {
		class string
		want  []string
	}{
		{"-", nil},
		{"", nil},
		{"crun", nil},
		{"kata", []string{`spec.runtimeClassName: runtime class "kata" is not configured on this node (runtimeClasses.kata): the pod would wait in ContainerCreating with FailedCreatePodSandBox events`}},
	} {
		if got := NodeWarnings(&c, pod(tc.class)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("class %q: %q, want %q", tc.class, got, tc.want)
		}
	}
}

func TestNodeConfig(t *testing.T) {
	c, err := NodeConfig("", nil)
	if err != nil || c.RuntimeClasses != nil || c.Manifests != Default().Manifests {
		t.Errorf("no file: %+v, %v", c.RuntimeClasses, err)
	}
	p := writeFile(t, header+"runtimeClasses:\n  crun:\n    options: {BinaryName: crun}\n")
	if c, err = NodeConfig(p, nil); err != nil || c.RuntimeClasses["crun"].BinaryName != "crun" {
		t.Errorf("%s: %+v, %v", p, c.RuntimeClasses, err)
	}
	c, err = NodeConfig("-", strings.NewReader(header+"runtimeClasses: {crun: {}}\n"))
	if _, ok := c.RuntimeClasses["crun"]; err != nil || !ok {
		t.Errorf("stdin: %+v, %v", c.RuntimeClasses, err)
	}
	missing := filepath.Join(t.TempDir(), "none.yaml")
	if _, err := NodeConfig(missing, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want it to unwrap to fs.ErrNotExist", err)
	}
}

// TestConfigSectionFields: every section sets the Config field of its key.
func TestConfigSectionFields(t *testing.T) {
	ct := reflect.TypeFor[Config]()
	for _, s := range configSections {
		found := false
		for i := range ct.NumField() {
			found = found || ct.Field(i).Tag.Get("yaml") == s.key
		}
		if !found {
			t.Errorf("section %s has no Config field of that yaml key", s.key)
		}
	}
}

func TestRuntimeClassBaseSpec(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "crun-base.json")
	spec := `{"ociVersion": "1.0.2-dev", "process": {"cwd": "/"}}`
	if err := os.WriteFile(base, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	file := header + "runtimeClasses:\n  crun:\n    options: {BinaryName: crun}\n    baseRuntimeSpec: " + base + "\n"
	c := Default()
	if err := ReadConfig("podvisor.yaml", []byte(file), &c); err != nil {
		t.Fatal(err)
	}
	if rc := c.RuntimeClasses["crun"]; rc.BaseRuntimeSpec != base || string(rc.BaseSpec) != spec {
		t.Errorf("crun: %+v", rc)
	}
	var buf bytes.Buffer
	if err := WriteConfig(&buf, c); err != nil {
		t.Fatal(err)
	}
	back := Default()
	if err := ReadConfig("view.yaml", buf.Bytes(), &back); err != nil || string(back.RuntimeClasses["crun"].BaseSpec) != spec {
		t.Errorf("read back: %+v, %v\n%s", back.RuntimeClasses["crun"], err, buf.String())
	}

	notJSON := filepath.Join(dir, "bad.json")
	noVersion := filepath.Join(dir, "noversion.json")
	for p, content := range map[string]string{notJSON: "ociVersion: 1.0.2\n", noVersion: `{"process": {}}`} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ value, want string }{
		{"crun-base.json", ":5: runtimeClasses.crun.baseRuntimeSpec: want the absolute path of an OCI runtime spec (JSON)"},
		{filepath.Join(dir, "none.json"), ":5: runtimeClasses.crun.baseRuntimeSpec: "},
		{notJSON, ":5: runtimeClasses.crun.baseRuntimeSpec: " + notJSON + ": not an OCI runtime spec"},
		{noVersion, ":5: runtimeClasses.crun.baseRuntimeSpec: " + noVersion + ": not an OCI runtime spec: no ociVersion"},
	} {
		file := header + "runtimeClasses:\n  crun:\n    baseRuntimeSpec: " + tc.value + "\n"
		p := writeFile(t, file)
		c := Default()
		err := ReadConfig(p, []byte(file), &c)
		if err == nil || !strings.Contains(err.Error(), p+tc.want) {
			t.Errorf("%s: %v, want %q", tc.value, err, p+tc.want)
		}
	}
}
