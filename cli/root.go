package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/podvisor/podvisor/daemon"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NewCommand is podvisor's command line: the root command with every
// verb, the global flags persistent on it so that every verb has them.
// Flags may come before or after arguments (pflag's interspersed
// parsing), as in kubectl.
func NewCommand() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "podvisor",
		Short: "a standalone static-pod supervisor on containerd",
		Long: `podvisor keeps the pods described by the manifests in a directory running on
containerd, with no control plane; podvisor run is the daemon, the other verbs
talk to it as kubectl talks to an apiserver.`,
		Version:       version.Version,
		SilenceErrors: true, // Execute prints them, once
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return g.fromEnv(cmd.Flags())
		},
	}
	root.SetVersionTemplate("podvisor version {{.Version}}\n")
	g.addFlags(root.PersistentFlags())
	// --version as before; -v is the log verbosity, as kubectl's.
	root.Flags().Bool("version", false, "print podvisor's version")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newRunCommand(g),
		newConfigCommand(g),
		newGetCommand(g),
		newDescribeCommand(g),
		newLogsCommand(g),
		newExecCommand(g),
		newAttachCommand(g),
		newRestartCommand(g),
		newRolloutCommand(g),
		newTopCommand(g),
		newValidateCommand(),
		newFieldsCommand(),
		newVersionCommand(g),
		newImagesCommand(g),
		newPSCommand(g),
		newLogDriverCommand(),
		newDocsCommand(),
		newDoctorCommand(g),
	)
	return root
}

// Execute runs the command line args (without the program's name) with
// ctx, printing an error to stderr as "podvisor: ..." (an ExitError's
// message as it is), and returns the
// exit code: 0, 1 for a failure, 2 for a usage error, or the code an
// exec'd command ended with.
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *ExitError
	switch msg := err.Error(); {
	case msg == "":
	case errors.As(err, &ee):
		fmt.Fprintln(stderr, msg) // as kubectl: "command terminated with exit code 3"
	default:
		fmt.Fprintln(stderr, "podvisor:", msg)
	}
	return ExitCode(err)
}

// Main is Execute with the process's arguments and streams.
func Main(ctx context.Context) int {
	return Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// ExitCode is the exit code err asks for: 2 for a usage error or a
// configuration podvisor run refuses, an ExitError's code, else 1.
func ExitCode(err error) int {
	var ee *ExitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ue), errors.Is(err, daemon.ErrInvalid),
		strings.HasPrefix(err.Error(), "unknown command "): // cobra's, untyped
		return 2
	}
	return 1
}

// ExitError is an error that ends podvisor with Code (exec's remote
// command's code, 130 for an interrupted session); its message may be
// empty, for an exit that says nothing more.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

func exitf(code int, format string, a ...any) error {
	return &ExitError{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// usageError is a command line podvisor refuses: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error {
	return usageError{fmt.Errorf(format, a...)}
}

// parentRun is the run of a command that only groups others (get,
// describe, config): its help, or a usage error for an unknown verb.
func parentRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return cmd.Help()
}

// noArgs refuses positional arguments, naming the first.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q: podvisor %s takes flags only", args[0], cmd.Name())
	}
	return nil
}

// flagEnv is a flag's environment variable: its value when the command
// line does not give the flag.
type flagEnv struct{ flag, env string }

// fromEnv gives the flags not on the command line their environment
// variable's value.
func fromEnv(fs *pflag.FlagSet, vars []flagEnv) error {
	for _, v := range vars {
		f := fs.Lookup(v.flag)
		if f == nil || f.Changed {
			continue
		}
		if val, ok := os.LookupEnv(v.env); ok && val != "" {
			if err := fs.Set(v.flag, val); err != nil {
				return usageErrorf("$%s: %v", v.env, err)
			}
		}
	}
	return nil
}
