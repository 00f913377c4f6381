package daemon

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/internal/trust"
	"github.com/podvisor/podvisor/supervise"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// RuntimeClassesKey is the configuration file's section of runtime
// classes. It stands for both halves of Kubernetes' runtime classes: the
// RuntimeClass objects (a pod's runtimeClassName names an entry) and
// containerd's CRI runtimes table (each entry's runtimeType and options),
// the class's name being its handler's.
const RuntimeClassesKey = "runtimeClasses"

// runtimeClassKeys are the keys of one class; runcOptionKeys and
// otherOptionKeys the options of the runc shim and of any other runtime
// type, as containerd's CRI configuration spells them.
var (
	runtimeClassKeys = []string{"runtimeType", "options", "baseRuntimeSpec"}
	runcOptionKeys   = []string{"BinaryName", "Root", "NoPivotRoot", "NoNewKeyring", "SystemdCgroup"}
	otherOptionKeys  = []string{"TypeUrl", "ConfigPath"}
	// unsupportedOptions are runc options containerd's CRI takes that
	// podvisor does not, with why.
	unsupportedOptions = map[string]string{
		"ShimCgroup":    "podvisor leaves the shims in containerd's cgroup",
		"IoUid":         "the container's I/O pipes stay root's",
		"IoGid":         "the container's I/O pipes stay root's",
		"CriuImagePath": "podvisor does not checkpoint containers",
		"CriuWorkPath":  "podvisor does not checkpoint containers",
	}
)

// readRuntimeClasses reads the runtimeClasses section: a mapping of class
// names to {runtimeType, options}. Each error names the line and the key
// (runtimeClasses.NAME.options.KEY).
func readRuntimeClasses(path string, v *yaml.Node) (map[string]ctrd.RuntimeClass, error) {
	fail := func(n *yaml.Node, key, format string, args ...any) error {
		return &ConfigError{Path: path, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fail(v, RuntimeClassesKey, "want a mapping of runtime class names to {runtimeType, options}")
	}
	out := map[string]ctrd.RuntimeClass{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, cv := v.Content[i], v.Content[i+1]
		name := k.Value
		key := RuntimeClassesKey + "." + name
		if _, dup := out[name]; dup {
			return nil, fail(k, key, "given twice")
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fail(k, key, "%q: not a valid runtime class name: %s", name, strings.Join(errs, "; "))
		}
		rc, err := readRuntimeClass(path, key, cv)
		if err != nil {
			return nil, err
		}
		if err := rc.Check(); err != nil {
			return nil, fail(k, key, "%v", err)
		}
		out[name] = rc
	}
	if len(out) == 0 {
		return nil, nil // as without the section: config view writes {}
	}
	return out, nil
}

// readRuntimeClass reads one class's {runtimeType, options,
// baseRuntimeSpec}.
func readRuntimeClass(path, key string, v *yaml.Node) (ctrd.RuntimeClass, error) {
	var rc ctrd.RuntimeClass
	fail := func(n *yaml.Node, key, format string, args ...any) error {
		return &ConfigError{Path: path, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return rc, nil // every default: runc
	}
	if v.Kind != yaml.MappingNode {
		return rc, fail(v, key, "want a mapping with runtimeType and options")
	}
	var options *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, fv := v.Content[i], v.Content[i+1]
		fkey := key + "." + k.Value
		if seen[k.Value] {
			return rc, fail(k, fkey, "given twice")
		}
		seen[k.Value] = true
		switch k.Value {
		case "runtimeType":
			if fv.Kind != yaml.ScalarNode || fv.Tag != "!!str" {
				return rc, fail(fv, fkey, "want a string such as %s", ctrd.DefaultRuntimeType)
			}
			if err := ctrd.CheckRuntimeType(fv.Value); err != nil {
				return rc, fail(fv, fkey, "%v", err)
			}
			rc.Type = fv.Value
		case "options":
			options = fv
		case "baseRuntimeSpec":
			if fv.Kind != yaml.ScalarNode || fv.Tag != "!!str" || !filepath.IsAbs(fv.Value) {
				return rc, fail(fv, fkey, "want the absolute path of an OCI runtime spec (JSON)")
			}
			// Read now, as containerd's CRI loads it at its start; a
			// file that decides what containers run as is root's.
			data, err := trust.ReadTrusted(fv.Value, os.Geteuid(), maxConfigFile)
			if err != nil {
				return rc, fail(fv, fkey, "%v", err)
			}
			var spec specs.Spec
			if err := json.Unmarshal(data, &spec); err != nil {
				return rc, fail(fv, fkey, "%s: not an OCI runtime spec: %v", fv.Value, err)
			}
			if spec.Version == "" {
				return rc, fail(fv, fkey, "%s: not an OCI runtime spec: no ociVersion", fv.Value)
			}
			rc.BaseRuntimeSpec, rc.BaseSpec = fv.Value, data
		default:
			return rc, fail(k, fkey, "unknown key (want %s)", strings.Join(runtimeClassKeys, ", "))
		}
	}
	if options == nil || options.Kind == yaml.ScalarNode && options.Tag == "!!null" {
		return rc, nil
	}
	okey := key + ".options"
	if options.Kind != yaml.MappingNode {
		return rc, fail(options, okey, "want a mapping of option names to values")
	}
	allowed := runcOptionKeys
	if !rc.IsRunc() {
		allowed = otherOptionKeys
	}
	seen = map[string]bool{}
	for i := 0; i+1 < len(options.Content); i += 2 {
		k, ov := options.Content[i], options.Content[i+1]
		name := k.Value
		fkey := okey + "." + name
		if seen[name] {
			return rc, fail(k, fkey, "given twice")
		}
		seen[name] = true
		if why, ok := unsupportedOptions[name]; ok && rc.IsRunc() {
			return rc, fail(k, fkey, "not supported: %s", why)
		}
		if !slices.Contains(allowed, name) {
			return rc, fail(k, fkey, "unknown option of %s (want %s)", cmp.Or(rc.Type, ctrd.DefaultRuntimeType), strings.Join(allowed, ", "))
		}
		switch name {
		case "NoPivotRoot", "NoNewKeyring", "SystemdCgroup":
			var b bool
			if ov.Kind != yaml.ScalarNode || ov.Tag != "!!bool" || ov.Decode(&b) != nil {
				return rc, fail(ov, fkey, "%q: want a boolean (true or false)", ov.Value)
			}
			switch name {
			case "NoPivotRoot":
				rc.NoPivotRoot = b
			case "NoNewKeyring":
				rc.NoNewKeyring = b
			case "SystemdCgroup":
				if b {
					// The runc shim would hand runc podvisor's cgroupfs
					// paths as systemd slices.
					return rc, fail(ov, fkey, "true is not supported: podvisor places containers in its own cgroups by path (cgroupfs), and a systemd cgroup driver would misread those paths")
				}
			}
		default:
			if ov.Kind != yaml.ScalarNode || ov.Tag != "!!str" || ov.Value == "" {
				return rc, fail(ov, fkey, "want a non-empty string")
			}
			switch name {
			case "BinaryName":
				rc.BinaryName = ov.Value
			case "Root":
				rc.Root = ov.Value
			case "TypeUrl":
				rc.TypeURL = ov.Value
			case "ConfigPath":
				rc.ConfigPath = ov.Value
			}
		}
	}
	return rc, nil
}

// runtimeClassesNode writes the section as readRuntimeClasses reads it,
// classes by name, each key only when it differs from its default.
func runtimeClassesNode(classes map[string]ctrd.RuntimeClass) *yaml.Node {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	boolean := func(b bool) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(b)}
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		rc := classes[name]
		cn := &yaml.Node{Kind: yaml.MappingNode}
		cn.Content = append(cn.Content, str("runtimeType"), str(cmp.Or(rc.Type, ctrd.DefaultRuntimeType)))
		on := &yaml.Node{Kind: yaml.MappingNode}
		for _, o := range []struct {
			key string
			v   *yaml.Node
			set bool
		}{
			{"BinaryName", str(rc.BinaryName), rc.BinaryName != ""},
			{"Root", str(rc.Root), rc.Root != ""},
			{"NoPivotRoot", boolean(true), rc.NoPivotRoot},
			{"NoNewKeyring", boolean(true), rc.NoNewKeyring},
			{"TypeUrl", str(rc.TypeURL), rc.TypeURL != ""},
			{"ConfigPath", str(rc.ConfigPath), rc.ConfigPath != ""},
		} {
			if o.set {
				on.Content = append(on.Content, str(o.key), o.v)
			}
		}
		if len(on.Content) > 0 {
			cn.Content = append(cn.Content, str("options"), on)
		}
		if rc.BaseRuntimeSpec != "" {
			cn.Content = append(cn.Content, str("baseRuntimeSpec"), str(rc.BaseRuntimeSpec))
		}
		n.Content = append(n.Content, str(name), cn)
	}
	return n
}

// validateRuntimeClasses checks classes given other than through the file
// (which checks each as it reads it).
func (c *Config) validateRuntimeClasses() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.RuntimeClasses)) {
		key := RuntimeClassesKey + "." + name
		if e := validation.IsDNS1123Subdomain(name); len(e) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q: not a valid runtime class name: %s", key, name, strings.Join(e, "; ")))
			continue
		}
		if err := c.RuntimeClasses[name].Check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	return errs
}

// runtimeClassHint says where a runtime class the node lacks would come
// from.
func runtimeClassHint(name string) string {
	return fmt.Sprintf("podvisor's configuration has no %s.%s (add it to the --config file and restart podvisor)", RuntimeClassesKey, name)
}

// lookupRuntimeClass is the supervisor's RuntimeClass manager: a class is
// known when the configuration has it.
func (c *Config) lookupRuntimeClass(name string) error {
	if _, ok := c.RuntimeClasses[name]; ok {
		return nil
	}
	return supervise.RuntimeClassNotFound(name, runtimeClassHint(name))
}

// runtimeClassesUsage is the section's comment in `podvisor config view`.
var runtimeClassesUsage = RuntimeClassesKey + ": runtime classes by name; a pod's runtimeClassName runs its containers with the class's containerd runtimeType (default " + ctrd.DefaultRuntimeType + ") and options (BinaryName, Root, NoPivotRoot, NoNewKeyring; TypeUrl and ConfigPath for another runtime type), its containers' specs built on baseRuntimeSpec when given"
