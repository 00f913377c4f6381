package cli

import (
	"github.com/podvisor/podvisor/daemon"
	"github.com/spf13/cobra"
)

// newConfigCommand is `podvisor config view`.
func newConfigCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "show podvisor's own configuration (podvisor config view)",
		RunE:  parentRun,
	}
	o := &runOptions{}
	view := &cobra.Command{
		Use:   "view [--config FILE] [run flags...]",
		Short: "print the configuration podvisor run would use (flags, then --config file, then defaults) as a file --config accepts",
		Long: `Print the configuration podvisor run would use with the same flags: the
command line, then the --config file, then the defaults, every key with its
effective value. podvisor config view [flags] | podvisor run --config - runs
exactly as podvisor run [flags] would.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.load(cmd, g)
			if err != nil {
				return err
			}
			return daemon.WriteConfig(cmd.OutOrStdout(), c)
		},
	}
	o.addFlags(view.Flags())
	cmd.AddCommand(view)
	return cmd
}
