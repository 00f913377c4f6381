package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/podvisor/podvisor/daemon"
	"github.com/podvisor/podvisor/doctor"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/pressure"
	"github.com/spf13/cobra"
)

// newDoctorCommand is podvisor doctor: the host checked with the
// settings podvisor run would use (the same flags and --config file).
func newDoctorCommand(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "doctor [--config FILE] [run flags...] [-o json]",
		Short: "check the host podvisor runs on (containerd, runc, cgroups, CNI, sysctls, manifests, disks, clock, images, apiserver, podvisor), each problem with its fix; exit 1 when one fails",
		Long: `Check the host as the README's troubleshooting table does, with the settings
podvisor run would use: give doctor the same flags or --config file. Every
warning and failure says how to fix it; the exit code is 1 when a check
fails, 0 otherwise (warnings included). podvisor need not be running.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" {
				return usageErrorf("unknown output format %q: want json or nothing", output)
			}
			c, err := o.load(cmd, g)
			if err != nil {
				return err
			}
			opts, err := doctorOptions(c, cmd, g)
			if err != nil {
				return err
			}
			findings := doctor.Run(cmd.Context(), opts)
			w := cmd.OutOrStdout()
			if output == "json" {
				b, err := json.MarshalIndent(findings, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(w, string(b))
			} else if err := doctor.WriteTable(w, findings); err != nil {
				return err
			}
			if doctor.Failed(findings) {
				return &ExitError{Code: 1} // the findings say why
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "json: a list of {check, status (ok, warn or fail), message, fix}")
	return cmd
}

// doctorOptions are the checks' settings from the daemon's configuration.
func doctorOptions(c daemon.Config, cmd *cobra.Command, g *globalOptions) (doctor.Options, error) {
	thresholds, err := pressure.Thresholds(c.EvictionHard, c.EvictionSoft, c.EvictionSoftGracePeriod, c.EvictionMinimumReclaim)
	if err != nil {
		return doctor.Options{}, err // Load validated them
	}
	unknown, err := manifest.ParseUnknownFieldPolicy(c.UnknownFields)
	if err != nil {
		return doctor.Options{}, err
	}
	node, err := daemon.NodeName(c.NodeName, "")
	if err != nil {
		return doctor.Options{}, err
	}
	paths := layout.Layout{StateDir: c.StateDir, RunDir: c.RunDir}
	o := doctor.Options{
		ContainerdAddress:   c.ContainerdAddress,
		ContainerdNamespace: c.ContainerdNamespace,
		EmbeddedContainerd:  c.EmbeddedContainerd,
		CNIConfDir:          c.CNIConfDir,
		CNIBinDirs:          filepath.SplitList(c.CNIBinDir),
		PodCIDR:             c.PodCIDR,
		Manifests:           c.Manifests,
		NodeName:            node,
		Parse:               manifest.ParseOptions{UnknownFields: unknown, AllowInsecure: c.AllowInsecureManifests},
		StateDir:            c.StateDir,
		LogDir:              c.LogDir,
		ImagesDir:           c.ImagesDir,
		Thresholds:          thresholds,
		Kubeconfig:          c.Kubeconfig,
		Socket:              paths.Socket(),
	}
	if c.EmbeddedContainerd {
		o.ContainerdAddress = filepath.Join(paths.ContainerdDir(), "containerd.sock")
	}
	if cmd.Flags().Changed("socket") {
		o.Socket = g.socket
	}
	return o, nil
}
