package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/podvisor/podvisor/api"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// noTTYWarning is kubectl's words for -t without a terminal stdin.
const noTTYWarning = "Unable to use a TTY - input is not a terminal or the right kind of file"

// streamOptions are the flags of podvisor exec and attach.
type streamOptions struct {
	container string
	stdin     bool
	tty       bool
	sel       podSelection
}

func (o *streamOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.container, "container", "c", "", "container name; default: the pod's kubectl.kubernetes.io/default-container or first container")
	fs.BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the container")
	fs.BoolVarP(&o.tty, "tty", "t", false, "stdin is a TTY")
	o.sel.addNamespaceFlag(fs)
}

func newExecCommand(g *globalOptions) *cobra.Command {
	o := &streamOptions{}
	cmd := &cobra.Command{
		Use:   "exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]",
		Short: "run a command in a running container (podvisor exec POD [-c C] [-i] [-t] -- CMD...)",
		RunE: func(cmd *cobra.Command, args []string) error {
			pod, command, err := execArgs(args, cmd.ArgsLenAtDash())
			if err != nil {
				return usageError{err}
			}
			return o.run(cmd, g, pod, false, func(ctx context.Context, cl *api.Client, pod string, so api.StreamOptions) error {
				return cl.Exec(ctx, pod, command, so)
			})
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func newAttachCommand(g *globalOptions) *cobra.Command {
	o := &streamOptions{}
	cmd := &cobra.Command{
		Use:   "attach POD [-c CONTAINER] [-i] [-t]",
		Short: "attach to a running container's main process (podvisor attach POD [-c C] [-i] [-t])",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("usage: podvisor attach POD [-c CONTAINER] [-i] [-t]")
			}
			stderr := cmd.ErrOrStderr()
			return o.run(cmd, g, args[0], true, func(ctx context.Context, cl *api.Client, pod string, so api.StreamOptions) error {
				interactive := so.TTY && so.Stdin != nil
				if interactive {
					fmt.Fprintln(stderr, "If you don't see a command prompt, try pressing enter.")
				}
				err := cl.Attach(ctx, pod, so)
				var ee *api.ExitError
				if interactive && (err == nil || errors.Is(err, context.Canceled)) && !errors.As(err, &ee) {
					// kubectl's words when a session is left and the process goes on.
					name, nsArg := pod, ""
					if ns, n, ok := strings.Cut(pod, "/"); ok {
						name, nsArg = n, " -n "+ns
					}
					fmt.Fprintf(stderr, "\r\nSession ended, resume using 'podvisor attach %s%s%s -i -t' command when the pod is running\r\n",
						name, containerArg(so.Container), nsArg)
				}
				return err
			})
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// execArgs splits exec's arguments into the pod and the command. dash is
// how many arguments came before "--" (-1: none); with none, what follows
// the pod is the command, as in kubectl's older form.
func execArgs(args []string, dash int) (pod string, cmd []string, err error) {
	if len(args) == 0 || dash == 0 {
		return "", nil, errors.New("usage: podvisor exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]: a pod name is required")
	}
	if dash > 1 {
		return "", nil, fmt.Errorf("usage: podvisor exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]: one pod before --, not %q", args[:dash])
	}
	pod, cmd = args[0], args[1:]
	if len(cmd) == 0 {
		return "", nil, errors.New("usage: podvisor exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]: you must specify at least one command for the container")
	}
	return pod, cmd, nil
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
// Without -c the container is picked here, as kubectl picks it
// (streamDefaultContainer), before the terminal goes raw.
func (so *streamOptions) run(cmd *cobra.Command, g *globalOptions, podArg string, attach bool, run func(context.Context, *api.Client, string, api.StreamOptions) error) error {
	stdin, stderr := cmd.InOrStdin(), cmd.ErrOrStderr()
	name, err := podName(podArg)
	if err != nil {
		return err
	}
	client, err := g.client()
	if err != nil {
		return err
	}
	// Kubelet's paths name the pod exactly (namespace and full name) and
	// the container: both are resolved here, as kubectl resolves them
	// through the apiserver, before the terminal goes raw.
	lctx, cancel := context.WithTimeout(cmd.Context(), podLookupTimeout)
	p, err := client.Pod(lctx, so.sel.qualified(name))
	cancel()
	if err != nil {
		return sessionExit(err)
	}
	pod, container := p.Namespace+"/"+p.Name, so.container
	if container == "" {
		container, err = streamDefaultContainer(p, stderr)
	} else {
		err = checkStreamContainer(p, container)
	}
	if err != nil {
		return sessionExit(err)
	}
	stdinFd := -1
	if f, ok := stdin.(*os.File); ok {
		stdinFd = int(f.Fd())
	}
	useStdin, useTTY, warning := streamSetup(so.stdin, so.tty, stdinFd >= 0 && term.IsTerminal(stdinFd))
	if warning != "" {
		fmt.Fprintln(stderr, warning)
	}
	if useTTY && attach && !containerHasTTY(p, container) {
		// kubectl's words; the session goes on without a terminal.
		fmt.Fprintf(stderr, "Unable to use a TTY - container %s did not allocate one\n", container)
		useTTY = false
	}
	o := api.StreamOptions{
		Container: container,
		Stdout:    cmd.OutOrStdout(),
		Stderr:    stderr,
		TTY:       useTTY,
	}
	if useStdin {
		o.Stdin = stdin
	}
	ctx := cmd.Context()
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
				return fmt.Errorf("put the terminal in raw mode: %w", err)
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
	return sessionExit(run(ctx, client, pod, o))
}

// sessionExit maps a session's end to podvisor's exit: the remote
// command's exit code, 1 for a failed session.
func sessionExit(err error) error {
	var ee *api.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return exitf(ee.Code, "%s", strings.TrimSpace(ee.Error()))
	case errors.Is(err, context.Canceled):
		return exitf(130, "session interrupted")
	}
	return exitf(1, "%s", err.Error())
}
