package cli

import (
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/spf13/cobra"
)

// newLogDriverCommand is the containerd binary log driver the shim starts
// (cmd/podvisor's main takes the shim's exact form before any of this).
func newLogDriverCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "log-driver ARG",
		Hidden: true,
		Short:  "containerd binary log driver (started by the shim)",
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return crilog.RunDriver(args[0])
		},
	}
}
