package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/podvisor/podvisor/api"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// noTTYWarning is kubectl's words for -t without a terminal stdin.
const noTTYWarning = "Unable to use a TTY - input is not a terminal or the right kind of file"

func streamFlags(socketFlag cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		socketFlag,
		&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "container name; default: the pod's kubectl.kubernetes.io/default-container or first container"},
		&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the container"},
		&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "stdin is a TTY"},
	}, clientFlags()...)
}

func execCommand(socketFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:                   "exec",
		Usage:                  "run a command in a running container (podvisor exec POD [-c C] [-i] [-t] -- CMD...)",
		ArgsUsage:              "POD -- COMMAND [ARG...]",
		Flags:                  streamFlags(socketFlag),
		UseShortOptionHandling: true,
		Action:                 execAction,
	}
}

func attachCommand(socketFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:                   "attach",
		Usage:                  "attach to a running container's main process (podvisor attach POD [-c C] [-i] [-t])",
		ArgsUsage:              "POD",
		Flags:                  streamFlags(socketFlag),
		UseShortOptionHandling: true,
		Action:                 attachAction,
	}
}

// execArgs splits exec's arguments into the pod and the command; the "--"
// before the command is optional, as in kubectl.
func execArgs(args []string) (pod string, cmd []string, err error) {
	if len(args) == 0 || args[0] == "--" {
		return "", nil, errors.New("usage: podvisor exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]: a pod name is required")
	}
	pod, cmd = args[0], args[1:]
	if len(cmd) > 0 && cmd[0] == "--" {
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		return "", nil, errors.New("usage: podvisor exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]: you must specify at least one command for the container")
	}
	return pod, cmd, nil
}

func execAction(c *cli.Context) error {
	pod, cmd, err := execArgs(c.Args().Slice())
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	return runStream(c, func(ctx context.Context, cl *api.Client, o api.StreamOptions) error {
		return cl.Exec(ctx, pod, cmd, o)
	})
}

func attachAction(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) != 1 {
		return cli.Exit("usage: podvisor attach POD [-c CONTAINER] [-i] [-t]", 2)
	}
	pod := args[0]
	return runStream(c, func(ctx context.Context, cl *api.Client, o api.StreamOptions) error {
		interactive := o.TTY && o.Stdin != nil
		if interactive {
			fmt.Fprintln(c.App.ErrWriter, "If you don't see a command prompt, try pressing enter.")
		}
		err := cl.Attach(ctx, pod, o)
		var ee *api.ExitError
		if interactive && (err == nil || errors.Is(err, context.Canceled)) && !errors.As(err, &ee) {
			// kubectl's words when a session is left and the process goes on.
			fmt.Fprintf(c.App.ErrWriter, "\r\nSession ended, resume using 'podvisor attach %s%s -i -t' command when the pod is running\r\n",
				pod, containerArg(c.String("container")))
		}
		return err
	})
}

func containerArg(name string) string {
	if name == "" {
		return ""
	}
	return " -c " + name
}

// terminal is the local side of a session: stdin's terminal, if any, put
// in raw mode for the session and restored on every way out.
type terminal struct {
	fd      int
	restore func()
}

// streamSetup decides a session's local streams from the flags and the
// kind of stdin, as kubectl does: -t without a terminal stdin is a
// warning and no TTY.
func streamSetup(stdinFlag, ttyFlag, stdinIsTerminal bool) (useStdin, useTTY bool, warning string) {
	useTTY = ttyFlag
	if ttyFlag && !stdinIsTerminal {
		useTTY, warning = false, noTTYWarning
	}
	return stdinFlag, useTTY, warning
}

// runStream runs one exec or attach session with the terminal set up and
// restored, and turns its end into podvisor's exit code.
func runStream(c *cli.Context, run func(context.Context, *api.Client, api.StreamOptions) error) error {
	stdinFd := int(os.Stdin.Fd())
	useStdin, useTTY, warning := streamSetup(c.Bool("stdin"), c.Bool("tty"), term.IsTerminal(stdinFd))
	if warning != "" {
		fmt.Fprintln(c.App.ErrWriter, warning)
	}
	o := api.StreamOptions{
		Container: c.String("container"),
		Stdout:    c.App.Writer,
		Stderr:    c.App.ErrWriter,
		TTY:       useTTY,
		Notice:    func(s string) { fmt.Fprintln(c.App.ErrWriter, s) },
	}
	if useStdin {
		o.Stdin = os.Stdin
	}
	ctx := c.Context
	if useTTY {
		if w, h, err := term.GetSize(stdinFd); err == nil {
			o.Size = api.TermSize{Width: uint16(w), Height: uint16(h)}
		}
		resize := make(chan api.TermSize, 1)
		o.Resize = resize
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if w, h, err := term.GetSize(stdinFd); err == nil {
					select {
					case <-resize: // the latest size wins
					default:
					}
					resize <- api.TermSize{Width: uint16(w), Height: uint16(h)}
				}
			}
		}()
		if useStdin {
			st, err := term.MakeRaw(stdinFd)
			if err != nil {
				return cli.Exit(fmt.Sprintf("put the terminal in raw mode: %v", err), 1)
			}
			defer term.Restore(stdinFd, st)
			// In raw mode the terminal sends ^C to the container; a
			// SIGTERM or SIGHUP still ends the session and restores it.
			var stop context.CancelFunc
			ctx, stop = signal.NotifyContext(ctx, syscall.SIGHUP)
			defer stop()
			// Raw mode needs \r\n from the remote terminal, which it gives.
		}
	}
	client, err := newAPIClient(c)
	if err != nil {
		return err
	}
	err = run(ctx, client, o)
	return sessionExit(err)
}

// sessionExit maps a session's end to podvisor's exit: the remote
// command's exit code, 1 for a failed session.
func sessionExit(err error) error {
	var ee *api.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return cli.Exit(strings.TrimSpace(ee.Error()), ee.Code)
	case errors.Is(err, context.Canceled):
		return cli.Exit("session interrupted", 130)
	}
	return cli.Exit(err.Error(), 1)
}
