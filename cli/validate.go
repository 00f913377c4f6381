package cli

import (
	"encoding/json"
	"fmt"

	"github.com/podvisor/podvisor/daemon"
	"github.com/podvisor/podvisor/manifest"
	"github.com/spf13/cobra"
)

// newValidateCommand is podvisor validate PATH...: the daemon's own parser
// and validator, offline.
func newValidateCommand() *cobra.Command {
	var nodeName, output string
	var allowInsecure bool
	unknownFields := "error"
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "check manifests offline with the daemon's own parser and validator",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("usage: podvisor validate [--node-name NAME] [-o json] PATH...")
			}
			unknown, err := manifest.ParseUnknownFieldPolicy(unknownFields)
			if err != nil {
				return usageErrorf("--unknown-fields: %v", err)
			}
			// The daemon's node name, without the state dir it is
			// remembered in.
			node, err := daemon.NodeName(nodeName, "")
			if err != nil {
				return err
			}
			report := manifest.Validate(args, node, manifest.ParseOptions{UnknownFields: unknown, AllowInsecure: allowInsecure})
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
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
	fs.StringVar(&nodeName, "node-name", "", "node name the pods would run on (default: the lowercased hostname)")
	fs.StringVarP(&output, "output", "o", "", "json for tools")
	daemon.AddUnknownFieldsFlag(fs, &unknownFields)
	daemon.AddAllowInsecureFlag(fs, &allowInsecure)
	return cmd
}
