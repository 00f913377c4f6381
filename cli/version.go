package cli

import (
	"fmt"

	"github.com/podvisor/podvisor/internal/version"
	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print podvisor's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "podvisor", version.Version)
			return nil
		},
	}
}
