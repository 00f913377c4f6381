package cdidev

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
)

// DefaultSpecDirs are the dirs containerd's CRI plugin reads CDI specs from
// by default (cdi_spec_dirs).
var DefaultSpecDirs = []string{"/etc/cdi", "/var/run/cdi"}

// AllDevice is the name vendors give the device that stands for all the
// others of its spec (NVIDIA's "all").
const AllDevice = "all"

// Registry is the CDI devices of a set of spec dirs.
type Registry struct {
	dirs  []string
	cache *cdi.Cache
}

// New returns the registry of the specs in dirs (DefaultSpecDirs when
// empty).
func New(dirs []string) *Registry {
	if len(dirs) == 0 {
		dirs = DefaultSpecDirs
	}
	dirs = slices.Clone(dirs)
	// The error is always nil (kept by the library for compatibility).
	c, _ := cdi.NewCache(cdi.WithSpecDirs(dirs...), cdi.WithAutoRefresh(false))
	return &Registry{dirs: dirs, cache: c}
}

// Dirs returns the spec dirs, highest precedence last.
func (r *Registry) Dirs() []string { return slices.Clone(r.dirs) }

// refresh reads the spec dirs again and returns what was wrong in them
// (specs that could not be read; the others are used).
func (r *Registry) refresh() error {
	return r.cache.Refresh()
}

// Devices returns the fully qualified names (vendor/class=name) of the
// devices of kind, the "all" device left out, in device order (numbers
// by value, then names).
func (r *Registry) Devices(kind string) []string {
	_ = r.refresh()
	return r.devices(kind)
}

func (r *Registry) devices(kind string) []string {
	var out []string
	for _, d := range r.cache.ListDevices() {
		k, name, ok := strings.Cut(d, "=")
		if ok && k == kind && name != AllDevice {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, CompareDevices)
	return out
}

// Has reports whether device (fully qualified) is defined by a spec.
func (r *Registry) Has(device string) bool {
	_ = r.refresh()
	return r.cache.GetDevice(device) != nil
}

// Counts reads the spec dirs again and returns how many devices each
// kind has, "all" left out.
func (r *Registry) Counts() map[string]int {
	_ = r.refresh()
	out := map[string]int{}
	for _, d := range r.cache.ListDevices() {
		if k, name, ok := strings.Cut(d, "="); ok && name != AllDevice {
			out[k]++
		}
	}
	return out
}

// Problems reads the spec dirs again and describes the specs that could not
// be used, one line each, by path.
func (r *Registry) Problems() []string {
	_ = r.refresh()
	var out []string
	errs := r.cache.GetErrors()
	for _, path := range slices.Sorted(maps.Keys(errs)) {
		if err := errors.Join(errs[path]...); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", path, strings.ReplaceAll(err.Error(), "\n", "; ")))
		}
	}
	return out
}

// Inject applies the container edits of devices (fully qualified names)
// to spec. A device no spec defines is an error naming it and the dirs.
func (r *Registry) Inject(spec *specs.Spec, devices []string) error {
	if len(devices) == 0 {
		return nil
	}
	// A spec that cannot be read matters only when it holds a device
	// asked for: the injection below says which is missing.
	_ = r.refresh()
	if unresolved, err := r.cache.InjectDevices(spec, devices...); err != nil {
		if len(unresolved) > 0 {
			return fmt.Errorf("CDI devices %s: no spec in %s defines them", strings.Join(unresolved, ", "), strings.Join(r.dirs, ", "))
		}
		return fmt.Errorf("inject CDI devices: %w", err)
	}
	return nil
}

// IsKind reports whether name is a CDI kind (vendor/class), the form an
// extended resource must have to map to CDI devices.
func IsKind(name string) bool {
	vendor, class := parser.ParseQualifier(name)
	return vendor != "" && class != "" && parser.ValidateVendorName(vendor) == nil && parser.ValidateClassName(class) == nil
}

// ParseDevice checks a fully qualified device name (vendor/class=name) and
// returns its kind.
func ParseDevice(device string) (kind string, err error) {
	vendor, class, _, err := parser.ParseQualifiedName(device)
	if err != nil {
		return "", err
	}
	return vendor + "/" + class, nil
}

// CompareDevices orders fully qualified device names: by kind, then by
// name, names that are numbers by value and before other names.
func CompareDevices(a, b string) int {
	ka, na, _ := strings.Cut(a, "=")
	kb, nb, _ := strings.Cut(b, "=")
	if c := cmp.Compare(ka, kb); c != 0 {
		return c
	}
	ia, errA := strconv.ParseUint(na, 10, 64)
	ib, errB := strconv.ParseUint(nb, 10, 64)
	switch {
	case errA == nil && errB == nil:
		if c := cmp.Compare(ia, ib); c != 0 {
			return c
		}
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(na, nb)
}
