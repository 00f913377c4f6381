package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/spf13/cobra"
)

// newRestartCommand is `podvisor restart POD [-c C]`; POD is NAME or
// pod/NAME, in -n's namespace, as the other verbs read it.
func newRestartCommand(g *globalOptions) *cobra.Command {
	var container string
	var sel podSelection
	cmd := &cobra.Command{
		Use:   "restart POD [-c CONTAINER]",
		Short: "restart a pod's containers now, resetting their crash back-off (podvisor restart POD [-c CONTAINER])",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("usage: podvisor restart POD [-c CONTAINER]")
			}
			name, err := podName(args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			client, err := g.client()
			if err != nil {
				return err
			}
			msg, err := client.Restart(ctx, sel.qualified(name), container)
			if err != nil {
				var ae *api.APIError
				if errors.As(err, &ae) {
					return exitf(1, "%s", ae.Message)
				}
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	sel.addNamespaceFlag(cmd.Flags())
	cmd.Flags().StringVarP(&container, "container", "c", "", "restart only this container (default: every app container and sidecar)")
	return cmd
}
