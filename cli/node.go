package cli

import (
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"github.com/spf13/cobra"
)

// newGetNodeCommand is podvisor get node (nodes, no): the local node with
// its conditions, as kubectl get nodes.
func newGetNodeCommand(g *globalOptions) *cobra.Command {
	var output string
	var noHeaders bool
	cmd := &cobra.Command{
		Use:     "node",
		Aliases: []string{"nodes", "no"},
		Short:   "show this node: Ready, and the pressure conditions that are True (MemoryPressure, DiskPressure, PIDPressure)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("usage: podvisor get node [-o json|yaml] (podvisor has one node)")
			}
			if output != "" && output != "json" && output != "yaml" {
				return usageErrorf("--output %q: podvisor get node prints a table, json or yaml", output)
			}
			client, err := g.client()
			if err != nil {
				return err
			}
			n, err := client.Node(cmd.Context())
			if err != nil {
				return err
			}
			if output != "" {
				return printers.PrintObject(cmd.OutOrStdout(), n, output)
			}
			return printers.Node(cmd.OutOrStdout(), n, noHeaders, time.Now())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a table)")
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "leave out the header line")
	return cmd
}

// newDescribeNodeCommand is podvisor describe node: the conditions and
// the eviction signals behind them, measured and against their thresholds.
func newDescribeNodeCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "node",
		Aliases: []string{"nodes", "no"},
		Short:   "show this node's conditions and its eviction signals (available, capacity, thresholds), as kubectl describe node",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("usage: podvisor describe node (podvisor has one node)")
			}
			client, err := g.client()
			if err != nil {
				return err
			}
			n, err := client.Node(cmd.Context())
			if err != nil {
				return err
			}
			return printers.DescribeNode(cmd.OutOrStdout(), n, time.Now())
		},
	}
}
