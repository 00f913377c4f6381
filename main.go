// Command podvisor is a standalone static-pod supervisor: it keeps the pods
// described by the manifests in a directory running on containerd, with no
// control plane. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/podvisor/podvisor/manifest"
	"github.com/urfave/cli/v2"
)

func main() {
	// The shim runs `podvisor log-driver ARG` with no environment; keep
	// that path free of CLI machinery.
	if len(os.Args) == 3 && os.Args[1] == "log-driver" {
		if err := crilog.RunDriver(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "podvisor log-driver:", err)
			os.Exit(1)
		}
		return
	}
	app := newApp()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := app.RunContext(ctx, reorderArgs(app, os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "podvisor:", err)
		os.Exit(exitCode(err))
	}
}

func newApp() *cli.App {
	socketFlag := &cli.StringFlag{Name: "socket", Value: api.DefaultSocket, Usage: "podvisor's API socket", EnvVars: []string{"PODVISOR_SOCKET"}}
	return &cli.App{
		Name:                 "podvisor",
		Usage:                "a standalone static-pod supervisor on containerd",
		Version:              version.Version,
		HideHelpCommand:      true,
		EnableBashCompletion: false,
		Flags:                append([]cli.Flag{globalSocketFlag()}, clientFlags()...),
		Commands: []*cli.Command{
			{
				Name:   "run",
				Usage:  "run the supervisor daemon",
				Flags:  append(runFlags(), configFlag()),
				Before: loadConfig,
				Action: runAction,
			},
			{
				Name:  "get",
				Usage: "show pods or events (podvisor get pods|events [-o wide|json|yaml] [-w])",
				Subcommands: []*cli.Command{{
					Name:      "pods",
					Aliases:   []string{"pod", "po"},
					Usage:     "list pods with their status",
					Flags:     append(getPodsFlags(socketFlag), clientFlags()...),
					ArgsUsage: "[NAME...]",
					Action:    getPodsAction,
				}, getEventsCommand(socketFlag)},
			},
			{
				Name:  "describe",
				Usage: "show one pod in detail with its events (podvisor describe pod NAME)",
				Subcommands: []*cli.Command{{
					Name:      "pod",
					Aliases:   []string{"pods", "po"},
					Usage:     "show a pod in detail, as kubectl describe pod does",
					ArgsUsage: "NAME",
					Flags:     append([]cli.Flag{socketFlag}, clientFlags()...),
					Action:    describePodAction,
				}},
			},
			configCommand(),
			restartCommand(socketFlag),
			execCommand(socketFlag),
			attachCommand(socketFlag),
			logsCommand(socketFlag),
			{
				Name:      "validate",
				Usage:     "check manifests offline with the daemon's own parser and validator",
				ArgsUsage: "PATH...",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "node-name", Usage: "node name the pods would run on (default: the lowercased hostname)"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "json for tools"},
					unknownFieldsFlag(),
				},
				Action: validateAction,
			},
			{
				Name:  "fields",
				Usage: "print which Pod fields this podvisor implements, ignores with a warning, or rejects (markdown)",
				Action: func(c *cli.Context) error {
					return manifest.WriteFieldTableMarkdown(c.App.Writer)
				},
			},
			topCommand(socketFlag),
			{
				Name:  "version",
				Usage: "print podvisor's version",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, "podvisor", version.Version)
					return nil
				},
			},
			{
				Name:      "log-driver",
				Hidden:    true,
				Usage:     "containerd binary log driver (started by the shim)",
				ArgsUsage: "ARG",
				Action: func(c *cli.Context) error {
					return crilog.RunDriver(c.Args().First())
				},
			},
		},
	}
}

// exitCode maps errors to exit codes: 1 for failures, 2 for usage errors.
func exitCode(err error) int {
	if ec, ok := err.(cli.ExitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
