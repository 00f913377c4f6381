package cli

import (
	"github.com/podvisor/podvisor/manifest"
	"github.com/spf13/cobra"
)

func newFieldsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "fields",
		Short: "print which Pod fields this podvisor implements, ignores with a warning, or rejects (markdown)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return manifest.WriteFieldTableMarkdown(cmd.OutOrStdout())
		},
	}
}
