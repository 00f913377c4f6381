package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podvisor/podvisor/internal/cdidev"
	"github.com/podvisor/podvisor/internal/trust"
	"github.com/podvisor/podvisor/manifest/podfile"
	"github.com/podvisor/podvisor/supervise"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// cdiSpecDirs are --cdi-spec-dirs' directories, in precedence order
// (later ones win); none when the flag is "".
func (c *Config) cdiSpecDirs() []string {
	var out []string
	for _, d := range strings.Split(c.CDISpecDirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}

// checkCDISpecDirs refuses a relative spec dir: containerd's
// cdi_spec_dirs are absolute, and podvisor's working directory is no
// place to look for devices.
func checkCDISpecDirs(c *Config) error {
	for _, d := range c.cdiSpecDirs() {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("%q is not an absolute directory", d)
		}
	}
	return nil
}

// cdiRegistry is the node's CDI devices, nil when no spec dir is set.
func (c *Config) cdiRegistry() *cdidev.Registry {
	dirs := c.cdiSpecDirs()
	if len(dirs) == 0 {
		return nil
	}
	return cdidev.New(dirs)
}

// WarnUntrustedCDISpecs logs, once at start, the CDI spec dirs and specs
// a user other than root could change: a spec's hooks run as root when a
// container with its devices starts, so it must be as trusted as a
// manifest. Missing dirs are not a problem (no devices), nor reported.
func (c *Config) WarnUntrustedCDISpecs(log *slog.Logger) {
	uid := trustedUID()
	for _, dir := range c.cdiSpecDirs() {
		ps, err := trust.CheckDir(dir, uid)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		for _, p := range ps {
			log.Warn("a CDI spec dir can be changed by users other than root: its specs' hooks run as root", "dir", dir, "problem", p)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			if ext := filepath.Ext(f); ext != ".json" && ext != ".yaml" {
				continue
			}
			ps, _ := trust.CheckFile(f, uid)
			for _, p := range ps {
				log.Warn("a CDI spec can be changed by users other than root: its hooks run as root", "spec", f, "problem", p)
			}
		}
	}
}

// cdiWarnings says, for `podvisor validate`, what of pod's devices this
// node's CDI specs cannot give (devices other pods hold aside): an
// extended resource whose kind no spec defines, or of which the specs
// define fewer devices than the pod asks for; a CDI annotation naming a
// device no spec defines. Each is "field: reason".
func cdiWarnings(c *Config, pod *v1.Pod) []string {
	dirs := c.cdiSpecDirs()
	where := "no CDI spec dir is configured (" + CDISpecDirsFlag + ")"
	var reg *cdidev.Registry
	if len(dirs) > 0 {
		where = "no CDI spec in " + strings.Join(dirs, ", ")
		reg = cdidev.New(dirs)
	}
	have := func(kind string) int {
		if reg == nil || !cdidev.IsKind(kind) {
			return 0
		}
		return len(reg.Devices(kind))
	}
	var out []string
	told := map[string]bool{}
	for _, ctrs := range []struct {
		path string
		list []v1.Container
	}{{"spec.initContainers", pod.Spec.InitContainers}, {"spec.containers", pod.Spec.Containers}} {
		for i, ctr := range ctrs.list {
			for _, rl := range []struct {
				path string
				list v1.ResourceList
			}{{"limits", ctr.Resources.Limits}, {"requests", ctr.Resources.Requests}} {
				for _, name := range slices.Sorted(maps.Keys(rl.list)) {
					kind := string(name)
					if !podfile.IsDeviceResource(name) || told[kind] {
						continue
					}
					told[kind] = true
					field := fmt.Sprintf("%s[%d].resources.%s[%s]", ctrs.path, i, rl.path, kind)
					n, want := have(kind), supervise.PodDeviceRequest(pod, kind)
					switch {
					case !cdidev.IsKind(kind):
						out = append(out, fmt.Sprintf("%s: %s is not a CDI kind (vendor/class), so no device can be given for it: the pod would be rejected (OutOf%s)", field, kind, kind))
					case n == 0:
						out = append(out, fmt.Sprintf("%s: %s defines devices of kind %s on this node: the pod would be rejected (OutOf%s)", field, where, kind, kind))
					case int64(n) < want:
						out = append(out, fmt.Sprintf("%s: the pod asks for %d devices of kind %s and the CDI specs in %s define %d: the pod would be rejected (OutOf%s)", field, want, kind, strings.Join(dirs, ", "), n, kind))
					}
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		if !strings.HasPrefix(k, supervise.CDIAnnotationPrefix) {
			continue
		}
		for _, d := range strings.Split(pod.Annotations[k], ",") {
			if d = strings.TrimSpace(d); reg == nil || !reg.Has(d) {
				out = append(out, fmt.Sprintf("metadata.annotations[%s]: CDI device %s: %s defines it: the pod would be rejected (%s)", k, d, where, supervise.ReasonUnexpectedAdmissionError))
			}
		}
	}
	if reg != nil && len(out) > 0 {
		// A spec that cannot be read may be the one meant.
		if ps := reg.Problems(); len(ps) > 0 {
			for i := range out {
				out[i] += " (CDI specs not used: " + strings.Join(ps, "; ") + ")"
			}
		}
	}
	return out
}

// CDISpecDirsFlag is the flag that names the CDI spec dirs.
const CDISpecDirsFlag = "--cdi-spec-dirs"

// cdiCapacity returns the node's extended resources as its CDI specs
// define them (each kind's devices, "all" left out), for the mirrored
// Node's capacity and allocatable; nil without spec dirs.
func cdiCapacity(reg *cdidev.Registry) func() v1.ResourceList {
	if reg == nil {
		return nil
	}
	return func() v1.ResourceList {
		out := v1.ResourceList{}
		for kind, n := range reg.Counts() {
			if n > 0 && podfile.IsDeviceResource(v1.ResourceName(kind)) {
				out[v1.ResourceName(kind)] = *resource.NewQuantity(int64(n), resource.DecimalSI)
			}
		}
		return out
	}
}
