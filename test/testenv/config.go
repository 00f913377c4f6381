package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/podvisor/podvisor/internal/embedded"
)

// cniBinDirs are where CNI plugins are looked for, in order.
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// findContainerd returns the containerd binary to run and whether it came
// from EnvContainerd. The variable may name the binary or a build
// directory holding containerd or bin/containerd.
func findContainerd() (path string, override bool, err error) {
	v := os.Getenv(EnvContainerd)
	if v == "" {
		p, err := exec.LookPath("containerd")
		if err != nil {
			return "", false, fmt.Errorf("find containerd: %w", err)
		}
		return p, false, nil
	}
	candidates := []string{v}
	if st, err := os.Stat(v); err == nil && st.IsDir() {
		candidates = []string{filepath.Join(v, "containerd"), filepath.Join(v, "bin", "containerd")}
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			abs, err := filepath.Abs(c)
			if err != nil {
				return "", false, fmt.Errorf("find containerd: %w", err)
			}
			return abs, true, nil
		}
	}
	return "", false, fmt.Errorf("find containerd: $%s=%s names no containerd executable", EnvContainerd, v)
}

// containerdConfig renders config.toml with podvisor's own generator (the
// one --embedded-containerd uses), keeping every path of the daemon inside
// e.Dir.
func containerdConfig(e *Env, major int) string {
	return embedded.Config(e.Root, e.State, e.Address, filepath.Join(e.Dir, "opt"), major)
}

// writeCNIConfig writes the network's conflist into CNIConfDir: a bridge
// with host-local IPAM on Subnet (no masquerade, no routes, so nothing
// leaves the host) and portmap for hostPort tests.
func writeCNIConfig(e *Env) error {
	type obj = map[string]any
	conf := obj{
		"cniVersion": "1.0.0",
		"name":       e.NetName,
		"plugins": []obj{
			{
				"type":        "bridge",
				"bridge":      e.Bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": obj{
					"type":    "host-local",
					"ranges":  [][]obj{{{"subnet": e.Subnet.String()}}},
					"dataDir": filepath.Join(e.Dir, "cni", "ipam"),
				},
			},
			{
				"type":         "portmap",
				"capabilities": obj{"portMappings": true},
			},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return fmt.Errorf("encode cni config: %w", err)
	}
	p := filepath.Join(e.CNIConfDir, "10-"+e.NetName+".conflist")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("write cni config: %w", err)
	}
	return nil
}

// existingDirs returns the entries of dirs that exist.
func existingDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// namespaced returns ctx in containerd namespace ns.
func namespaced(ctx context.Context, ns string) context.Context {
	return namespaces.WithNamespace(ctx, ns)
}
