package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/podvisor/podvisor/daemon"
	"github.com/podvisor/podvisor/manifest"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
)

// newValidateCommand is podvisor validate PATH...: the daemon's own parser
// and validator, offline, and the checks of what each pod needs from the
// node against the node's configuration file.
func newValidateCommand() *cobra.Command {
	var nodeName, output, configFile string
	var allowInsecure bool
	unknownFields := "error"
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "check manifests offline with the daemon's own parser and validator",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("usage: podvisor validate [--node-name NAME] [--config FILE] [-o json] PATH...")
			}
			unknown, err := manifest.ParseUnknownFieldPolicy(unknownFields)
			if err != nil {
				return usageErrorf("--unknown-fields: %v", err)
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			node, err := nodeConfig(cmd, &configFile)
			if err != nil {
				return err
			}
			// The daemon's node name, without the state dir it is
			// remembered in: the flag, else the file's, else the host's.
			if !cmd.Flags().Changed("node-name") {
				nodeName = node.NodeName
			}
			nodeName, err = daemon.NodeName(nodeName, "")
			if err != nil {
				return err
			}
			report := manifest.Validate(args, nodeName, manifest.ParseOptions{
				UnknownFields: unknown,
				AllowInsecure: allowInsecure,
				NodeCheck:     func(p *v1.Pod) []string { return daemon.NodeWarnings(&node, p) },
			})
			switch output {
			case "json":
				b, err := json.MarshalIndent(report, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, string(b))
			case "":
				for _, e := range report.Errors {
					fmt.Fprintln(stdout, e.Error())
				}
				for _, w := range report.Warnings {
					fmt.Fprintln(stdout, "warning: "+w.Error())
				}
				for _, p := range report.Pods {
					fmt.Fprintf(stderr, "ok: pod %s (uid %s) from %s\n", p.Key, p.UID, p.Path)
				}
			default:
				return usageErrorf("unknown output format %q: want json or nothing", output)
			}
			if !report.Valid() {
				return &ExitError{Code: 1} // the report says why
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&nodeName, "node-name", "", "node name the pods would run on (default: the --config file's nodeName, else the lowercased hostname)")
	fs.StringVarP(&output, "output", "o", "", "json for tools")
	fs.StringVar(&configFile, daemon.ConfigFlag, "", "podvisor run's configuration file (\"-\": stdin), whose settings the pods are checked against, such as its runtimeClasses (env PODVISOR_CONFIG; default: none)")
	daemon.AddUnknownFieldsFlag(fs, &unknownFields)
	daemon.AddAllowInsecureFlag(fs, &allowInsecure)
	return cmd
}

// nodeConfig reads the configuration podvisor run would read: --config,
// else $PODVISOR_CONFIG, else none. A file $PODVISOR_CONFIG names that
// does not exist is no error here (validate may run on another machine
// than the node): the pods are checked against the defaults, with a note.
func nodeConfig(cmd *cobra.Command, file *string) (daemon.Config, error) {
	fromFlag := cmd.Flags().Changed(daemon.ConfigFlag)
	if err := fromEnv(cmd.Flags(), []flagEnv{{daemon.ConfigFlag, "PODVISOR_CONFIG"}}); err != nil {
		return daemon.Config{}, err
	}
	c, err := daemon.NodeConfig(*file, cmd.InOrStdin())
	if err != nil && !fromFlag && errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: $PODVISOR_CONFIG names %s, which does not exist: the pods are checked against podvisor's defaults\n", *file)
		return daemon.NodeConfig("", nil)
	}
	return c, err
}
