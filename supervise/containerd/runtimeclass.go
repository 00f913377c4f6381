package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	runtimeoptions "github.com/containerd/containerd/api/types/runtimeoptions/v1"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	v1 "k8s.io/api/core/v1"
)

// DefaultRuntimeType is the containerd runtime (shim) of a pod without a
// runtime class, and of a class that names none: runc through its v2 shim,
// containerd's CRI default.
const DefaultRuntimeType = "io.containerd.runc.v2"

// RuntimeClass is how the containers of one runtime class run: an entry
// of containerd's CRI runtimes table (runtime_type and its options). The
// runc options apply to DefaultRuntimeType only (BinaryName makes its
// shim run another OCI runtime, such as crun); TypeURL and ConfigPath to
// any other runtime type, as containerd's CRI gives them.
type RuntimeClass struct {
	// Type is the containerd runtime, io.containerd.<name>.<version>,
	// whose shim is containerd-shim-<name>-<version>; "" is
	// DefaultRuntimeType.
	Type string
	// BinaryName is the OCI runtime the runc shim runs ("": runc), a name
	// looked up in containerd's PATH or an absolute path.
	BinaryName string
	// Root is that runtime's state directory ("": the shim's default).
	Root string
	// NoPivotRoot and NoNewKeyring are runc's --no-pivot and
	// --no-new-keyring.
	NoPivotRoot  bool
	NoNewKeyring bool
	// TypeURL and ConfigPath are another runtime type's options: the
	// type of its configuration file, and that file.
	TypeURL    string
	ConfigPath string
	// BaseRuntimeSpec is an OCI runtime spec file (JSON) the containers'
	// specs start from instead of containerd's default spec, as
	// base_runtime_spec in containerd's CRI; BaseSpec is its content, read
	// with the configuration.
	BaseRuntimeSpec string
	BaseSpec        []byte
}

// IsRunc reports whether the class runs through the runc shim, whose
// options are runc's.
func (rc RuntimeClass) IsRunc() bool {
	return rc.Type == "" || rc.Type == DefaultRuntimeType
}

// Check says what is wrong with the class, naming the setting: a runtime
// type containerd cannot resolve to a shim, or options of another type.
func (rc RuntimeClass) Check() error {
	if rc.Type != "" {
		if err := CheckRuntimeType(rc.Type); err != nil {
			return err
		}
	}
	if rc.BaseRuntimeSpec != "" && !strings.HasPrefix(rc.BaseRuntimeSpec, "/") {
		return fmt.Errorf("baseRuntimeSpec %q: want an absolute path", rc.BaseRuntimeSpec)
	}
	if len(rc.BaseSpec) > 0 {
		var s oci.Spec
		if err := json.Unmarshal(rc.BaseSpec, &s); err != nil {
			return fmt.Errorf("baseRuntimeSpec %s: not an OCI runtime spec: %w", rc.BaseRuntimeSpec, err)
		}
	}
	if rc.IsRunc() {
		if rc.TypeURL != "" || rc.ConfigPath != "" {
			return fmt.Errorf("TypeUrl and ConfigPath are options of other runtime types than %s", DefaultRuntimeType)
		}
		if rc.BinaryName != "" && strings.Contains(rc.BinaryName, "/") && !strings.HasPrefix(rc.BinaryName, "/") {
			return fmt.Errorf("BinaryName %q: want a name looked up in containerd's PATH or an absolute path", rc.BinaryName)
		}
		if rc.Root != "" && !strings.HasPrefix(rc.Root, "/") {
			return fmt.Errorf("Root %q: want an absolute directory", rc.Root)
		}
		return nil
	}
	if rc.BinaryName != "" || rc.Root != "" || rc.NoPivotRoot || rc.NoNewKeyring {
		return fmt.Errorf("BinaryName, Root, NoPivotRoot and NoNewKeyring are options of %s, not of %s", DefaultRuntimeType, rc.Type)
	}
	if rc.ConfigPath != "" && !strings.HasPrefix(rc.ConfigPath, "/") {
		return fmt.Errorf("ConfigPath %q: want an absolute path", rc.ConfigPath)
	}
	return nil
}

// CheckRuntimeType says why containerd would find no shim for a runtime
// type: it is named io.containerd.<name>.<version> (at least two
// dot-separated parts, the last two naming containerd-shim-<name>-<version>).
func CheckRuntimeType(t string) error {
	parts := strings.Split(t, ".")
	if len(parts) < 2 || parts[0] == "" || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" || strings.ContainsAny(t, "/ \t") {
		return fmt.Errorf("%q: not a containerd runtime type such as %s (its shim is containerd-shim-<name>-<version>)", t, DefaultRuntimeType)
	}
	return nil
}

// runtime returns the class's containerd runtime and options, as
// containerd's CRI builds them from its runtimes table: runc's options for
// the runc shim, the generic ones for another, none when none are set.
func (rc RuntimeClass) runtime() (string, any) {
	if rc.IsRunc() {
		if rc.BinaryName == "" && rc.Root == "" && !rc.NoPivotRoot && !rc.NoNewKeyring {
			return DefaultRuntimeType, nil
		}
		return DefaultRuntimeType, &runcoptions.Options{BinaryName: rc.BinaryName, Root: rc.Root, NoPivotRoot: rc.NoPivotRoot, NoNewKeyring: rc.NoNewKeyring}
	}
	if rc.TypeURL == "" && rc.ConfigPath == "" {
		return rc.Type, nil
	}
	return rc.Type, &runtimeoptions.Options{TypeUrl: rc.TypeURL, ConfigPath: rc.ConfigPath}
}

// specBase returns, for a class with a base spec, the SpecOpts that
// replaces containerd's default spec with it, to run before all others:
// containerd's CRI builds a container's spec on its runtime's
// base_runtime_spec so.
func (rc RuntimeClass) specBase() []oci.SpecOpts {
	if len(rc.BaseSpec) == 0 {
		return nil
	}
	base := rc.BaseSpec
	return []oci.SpecOpts{func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		*s = oci.Spec{}
		if err := json.Unmarshal(base, s); err != nil {
			return fmt.Errorf("base runtime spec: %w", err)
		}
		return nil
	}}
}

// ErrNoRuntimeClass is what creating a container of a pod whose runtime
// class the node does not have unwraps to.
var ErrNoRuntimeClass = errors.New("runtime class not configured")

// podRuntime is the containerd runtime and options of pod's containers.
func (r *Runtime) podRuntime(pod *v1.Pod) (string, any, error) {
	rc, err := r.podClass(pod)
	if err != nil {
		return "", nil, err
	}
	t, o := rc.runtime()
	return t, o, nil
}

// podClass is the runtime class of pod's containers: the zero class
// (DefaultRuntimeType) for a pod without one.
func (r *Runtime) podClass(pod *v1.Pod) (RuntimeClass, error) {
	name := ""
	if pod != nil && pod.Spec.RuntimeClassName != nil {
		name = *pod.Spec.RuntimeClassName
	}
	if name == "" {
		return RuntimeClass{}, nil
	}
	rc, ok := r.opts.RuntimeClasses[name]
	if !ok {
		// containerd's CRI words it so for a handler it does not have.
		return rc, fmt.Errorf("%w: no runtime for %q is configured", ErrNoRuntimeClass, name)
	}
	return rc, nil
}
