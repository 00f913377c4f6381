package cli

import (
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"github.com/spf13/cobra"
)

// newDescribeCommand is podvisor describe pod NAME.
func newDescribeCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "show one pod in detail with its events (podvisor describe pod NAME)",
		RunE:  parentRun,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "pod NAME",
		Aliases: []string{"pods", "po"},
		Short:   "show a pod in detail, as kubectl describe pod does",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("usage: podvisor describe pod NAME")
			}
			client, err := g.client()
			if err != nil {
				return err
			}
			pod, err := client.Pod(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			events, err := client.Events(cmd.Context())
			if err != nil {
				return err
			}
			return printers.PrintDescribe(cmd.OutOrStdout(), pod, events.Items, time.Now())
		},
	})
	return cmd
}
