package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/podvisor/podvisor/cni"
)

// checkCNI reads the network podvisor would use, with package cni's own
// choice, and looks for every plugin it names (IPAM plugins too, and the
// loopback every pod gets) in the plugin directories. It returns the
// network, nil when there is none.
func checkCNI(o Options) (*libcni.NetworkConfigList, []Finding) {
	const check = "cni"
	list, file, skipped, err := cni.Network(o.CNIConfDir, o.PodCIDR, "")
	var out []Finding
	for _, s := range skipped {
		sev := warn
		if err != nil {
			sev = fail
		}
		out = append(out, sev(check, "fix or remove "+s.File+" (podvisor uses the first valid file in lexical order)",
			"%s is not a valid CNI config: %v", s.File, s.Err))
	}
	if err != nil {
		return nil, append(out, fail(check, "put a valid .conflist in "+o.CNIConfDir+", or remove every config there for the built-in network", "%v", err))
	}
	from := file
	if file == "" {
		from = "built in (no config in " + o.CNIConfDir + ")"
	}
	dirs := strings.Join(o.CNIBinDirs, ":")
	missing := 0
	for _, p := range plugins(list) {
		if _, err := invoke.FindInPath(p, o.CNIBinDirs); err != nil {
			missing++
			out = append(out, fail(check, fmt.Sprintf("install the CNI plugin %s in one of %s (Debian: apt install containernetworking-plugins), or fix its type in %s", p, dirs, from),
				"network %s (%s): plugin %s not found in %s", list.Name, from, p, dirs))
		}
	}
	if missing == 0 {
		out = append(out, ok(check, "network %s (%s): plugins %s found in %s", list.Name, from, strings.Join(plugins(list), ", "), dirs))
	}
	return list, out
}

// plugins are the plugin types a pod's ADD runs: loopback (every pod's
// own network), each plugin of list and each one's IPAM plugin.
func plugins(list *libcni.NetworkConfigList) []string {
	out := []string{"loopback"}
	add := func(t string) {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, p := range list.Plugins {
		add(p.Network.Type)
		add(p.Network.IPAM.Type)
	}
	return out
}
