package containerd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/containerd/v2/contrib/apparmor"
	"github.com/containerd/containerd/v2/pkg/oci"
	v1 "k8s.io/api/core/v1"
)

// defaultAppArmorProfile is the profile containerd's CRI plugin generates
// and loads for containers that ask for none or for RuntimeDefault; sharing
// its name means a host running both loads it once.
const defaultAppArmorProfile = "cri-containerd.apparmor.d"

// appArmorProfiles lists the profiles loaded in the kernel.
const appArmorProfiles = "/sys/kernel/security/apparmor/profiles"

// appArmorChoice is the profile decided for one container.
type appArmorChoice struct {
	// Profile is the profile to confine the process with; "" leaves it
	// unconfined.
	Profile string
	// Default says Profile is defaultAppArmorProfile, loaded on demand.
	Default bool
}

// decideAppArmor chooses a container's profile as the CRI plugin does
// (internal/cri/sputil GenerateApparmorSpecOpts): with AppArmor enabled, a
// container that sets none gets the runtime default unless it is
// privileged, RuntimeDefault is the same, Localhost names a profile that
// must be loaded, Unconfined is none. Without AppArmor only Localhost is an
// error: RuntimeDefault asks for the default confinement and there is none
// (the CRI refuses it; kubelet refuses any non-Unconfined profile there).
func decideAppArmor(p *v1.AppArmorProfile, privileged, enabled bool, loaded func(string) (bool, error)) (appArmorChoice, error) {
	if p != nil && p.Type == v1.AppArmorProfileTypeLocalhost {
		name := ""
		if p.LocalhostProfile != nil {
			name = strings.TrimPrefix(*p.LocalhostProfile, "localhost/")
		}
		if name == "" {
			return appArmorChoice{}, errors.New("appArmorProfile Localhost needs localhostProfile")
		}
		if !enabled {
			return appArmorChoice{}, fmt.Errorf("appArmorProfile Localhost %q: AppArmor is not enabled on this host", name)
		}
		ok, err := loaded(name)
		if err != nil {
			return appArmorChoice{}, fmt.Errorf("appArmorProfile Localhost %q: %w", name, err)
		}
		if !ok {
			return appArmorChoice{}, fmt.Errorf("apparmor profile not found %s", name)
		}
		return appArmorChoice{Profile: name}, nil
	}
	if !enabled {
		return appArmorChoice{}, nil
	}
	if p == nil || p.Type == v1.AppArmorProfileTypeRuntimeDefault {
		if privileged {
			return appArmorChoice{}, nil
		}
		return appArmorChoice{Profile: defaultAppArmorProfile, Default: true}, nil
	}
	if p.Type == v1.AppArmorProfileTypeUnconfined {
		return appArmorChoice{}, nil
	}
	return appArmorChoice{}, fmt.Errorf("appArmorProfile type %q is not supported", p.Type)
}

// opts confines the process with the chosen profile; the default profile
// is generated and loaded first if the kernel does not have it yet.
func (a appArmorChoice) opts() []oci.SpecOpts {
	switch {
	case a.Default:
		return []oci.SpecOpts{apparmor.WithDefaultProfile(a.Profile)}
	case a.Profile != "":
		return []oci.SpecOpts{apparmor.WithProfile(a.Profile)}
	}
	return nil
}

// appArmorLoaded reports whether the kernel has the profile loaded, as the
// CRI plugin checks a Localhost profile.
func appArmorLoaded(name string) (bool, error) {
	f, err := os.Open(appArmorProfiles)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), name+" (") {
			return true, nil
		}
	}
	return false, sc.Err()
}
