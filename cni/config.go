package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/containernetworking/cni/libcni"
)

// BuiltinNetwork is the name of the built-in network used when the
// configuration directory holds no config.
const BuiltinNetwork = "podvisor"

// BuiltinBridge is the Linux bridge of the built-in network.
const BuiltinBridge = "podvisor0"

// DefaultPodCIDR is the subnet of the built-in network when Config.PodCIDR
// is empty (the same default as containerd's example config).
const DefaultPodCIDR = "10.88.0.0/16"

// loopbackConfList is attached to every pod before the primary network. It
// is a list (not a single plugin config) so that every cached attachment has
// the same shape and DEL needs one code path; go-cni does the same.
const loopbackConfList = `{"cniVersion":"1.0.0","name":"podvisor-lo","plugins":[{"type":"loopback"}]}`

// confExtensions are the file types read from the configuration directory,
// as libcni.ConfFiles, kubelet and containerd read them.
var confExtensions = []string{".conflist", ".conf", ".json"}

// BuiltinConfList returns the built-in conflist JSON used when the
// configuration directory has no config: a bridge network "podvisor" on
// bridge "podvisor0" that is the pods' gateway and masquerades their
// traffic, with host-local IPAM over podCIDR (state in dataDir, the plugin's
// default when empty) and a default route, followed by portmap for
// hostPort. Loopback is not part of it: every pod gets the separate loopback
// network whatever its primary network is.
func BuiltinConfList(podCIDR, dataDir string) []byte {
	ipam := map[string]any{
		"type":   "host-local",
		"subnet": podCIDR,
		"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
	}
	if dataDir != "" {
		ipam["dataDir"] = dataDir
	}
	list := map[string]any{
		"cniVersion": "1.0.0",
		"name":       BuiltinNetwork,
		"plugins": []map[string]any{
			{
				"type":        "bridge",
				"bridge":      BuiltinBridge,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam":        ipam,
			},
			{
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
			},
		},
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		// Only maps of strings, bools and slices: cannot fail.
		panic(err)
	}
	return b
}

// loadNetwork returns the primary network (Network), logging the invalid
// files it skipped.
func (m *Manager) loadNetwork() (*libcni.NetworkConfigList, error) {
	list, _, skipped, err := Network(m.cfg.ConfDir, m.cfg.PodCIDR, m.cfg.DataDir)
	for _, s := range skipped {
		m.log.Warn("skipping invalid cni config", "file", s.File, "err", s.Err)
	}
	return list, err
}

// SkippedConfig is an invalid config file Network passed over.
type SkippedConfig struct {
	File string
	Err  error
}

// Network returns the primary network: the first valid config file in
// confDir in lexical order (file is its path), or the built-in network
// (file "") when confDir holds none. Invalid files are skipped (one broken
// file does not take the network down), but when files exist and none is
// valid it is an error: a silent fallback to the built-in network would put
// pods on a network the administrator did not choose. It is what the
// daemon and `podvisor doctor` read.
func Network(confDir, podCIDR, dataDir string) (list *libcni.NetworkConfigList, file string, skipped []SkippedConfig, err error) {
	if confDir != "" {
		files, err := libcni.ConfFiles(confDir, confExtensions)
		if err != nil {
			return nil, "", nil, fmt.Errorf("read cni conf dir: %w", err)
		}
		sort.Strings(files)
		var errs []error
		for _, f := range files {
			list, err := loadConfFile(f)
			if err != nil {
				skipped = append(skipped, SkippedConfig{File: f, Err: err})
				errs = append(errs, err)
				continue
			}
			return list, f, skipped, nil
		}
		if len(errs) > 0 {
			return nil, "", skipped, fmt.Errorf("no valid cni config in %s: %w", confDir, errors.Join(errs...))
		}
	}
	if podCIDR == "" {
		podCIDR = DefaultPodCIDR
	}
	list, err = libcni.NetworkConfFromBytes(BuiltinConfList(podCIDR, dataDir))
	if err != nil {
		return nil, "", nil, fmt.Errorf("parse built-in network: %w", err)
	}
	return list, "", nil, nil
}

// loadConfFile reads one config file. A .conflist is a network list; a .conf
// or .json file holding a single plugin config is upgraded to a list of one,
// and one that holds a list (a common mistake in the wild) is read as a list.
func loadConfFile(path string) (*libcni.NetworkConfigList, error) {
	if filepath.Ext(path) == ".conflist" {
		list, err := libcni.NetworkConfFromFile(path)
		if err != nil {
			return nil, err
		}
		return checkList(list)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	list, err := confListFromBytes(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return list, nil
}

// confListFromBytes parses a network list, or a single plugin config which
// it wraps in a list of one with the plugin's name and version. libcni's own
// ConfListFromConf does the same but is deprecated.
func confListFromBytes(b []byte) (*libcni.NetworkConfigList, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parse cni config: %w", err)
	}
	if _, ok := raw["plugins"]; !ok {
		plugin, err := libcni.NetworkPluginConfFromBytes(b)
		if err != nil {
			return nil, err
		}
		b, err = json.Marshal(map[string]any{
			"name":       plugin.Network.Name,
			"cniVersion": plugin.Network.CNIVersion,
			"plugins":    []any{raw},
		})
		if err != nil {
			return nil, fmt.Errorf("wrap plugin config: %w", err)
		}
	}
	list, err := libcni.NetworkConfFromBytes(b)
	if err != nil {
		return nil, err
	}
	return checkList(list)
}

func checkList(list *libcni.NetworkConfigList) (*libcni.NetworkConfigList, error) {
	switch {
	case list.Name == "":
		return nil, errors.New("network has no name")
	case len(list.Plugins) == 0:
		return nil, fmt.Errorf("network %s has no plugins", list.Name)
	}
	return list, nil
}
