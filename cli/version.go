package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/spf13/cobra"
)

// versionTimeout bounds podvisor version's request to the daemon.
const versionTimeout = 10 * time.Second

// newVersionCommand is podvisor version, as kubectl version: the
// client's version, then the server's (the daemon's /version) unless
// --client; an unreachable daemon is an error after the client's.
func newVersionCommand(g *globalOptions) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the client's version and the daemon's (with its Go and containerd versions)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Client Version: %s\n", version.Version)
			if clientOnly {
				return nil
			}
			client, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), versionTimeout)
			defer cancel()
			v, err := client.Version(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Server Version: %s\n", printers.Escape(v.Version))
			fmt.Fprintf(out, "Server Go Version: %s\n", printers.Escape(v.GoVersion))
			fmt.Fprintf(out, "Server Platform: %s\n", printers.Escape(v.Platform))
			if v.ContainerdVersion != "" {
				fmt.Fprintf(out, "Containerd Version: %s\n", printers.Escape(v.ContainerdVersion))
			} else {
				fmt.Fprintf(out, "Containerd Version: unknown (%s)\n", printers.Escape(v.ContainerdError))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print only the client's version; do not ask the daemon")
	return cmd
}
