package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/status"
	"github.com/spf13/cobra"
)

// newRolloutCommand is `podvisor rollout status|history|undo POD`, as
// kubectl's verbs, on the revisions the daemon keeps.
func newRolloutCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout status|history|undo POD",
		Short: "a pod's revisions: wait for its rollout, list them, go back one (podvisor rollout status|history|undo POD)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newRolloutStatusCommand(g), newRolloutHistoryCommand(g), newRolloutUndoCommand(g))
	return cmd
}

// rolloutVerb is the RunE of a rollout verb: its one POD argument, in
// sel's namespace, and a client of the daemon, handed to run.
func rolloutVerb(g *globalOptions, sel *podSelection, usage string, run func(cmd *cobra.Command, client *api.Client, name string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErrorf("usage: podvisor rollout %s", usage)
		}
		name, err := podName(args[0])
		if err != nil {
			return err
		}
		client, err := g.client()
		if err != nil {
			return err
		}
		return run(cmd, client, sel.qualified(name))
	}
}

// apiFailure turns the API's error answer into the CLI's exit 1.
func apiFailure(err error) error {
	var ae *api.APIError
	if errors.As(err, &ae) {
		return exitf(1, "%s", ae.Message)
	}
	return err
}

func newRolloutStatusCommand(g *globalOptions) *cobra.Command {
	var (
		sel     podSelection
		watch   bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status POD [--watch=false] [--timeout D]",
		Short: "wait until the pod's manifest revision is rolled out, or says it was rolled back (exit 1)",
		RunE: rolloutVerb(g, &sel, "status POD", func(cmd *cobra.Command, client *api.Client, name string) error {
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return rolloutStatus(ctx, client, name, watch, cmd.OutOrStdout())
		}),
	}
	sel.addNamespaceFlag(cmd.Flags())
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "wait until the rollout ends (false: print its state once)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting after this long (0: wait until it ends)")
	return cmd
}

// rolloutStatus prints the rollout's state as it changes, as kubectl
// rollout status does, until it is Complete (exit 0) or RolledBack (1).
func rolloutStatus(ctx context.Context, client *api.Client, name string, watch bool, out io.Writer) error {
	last := ""
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ro, err := client.Rollout(rctx, name)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return exitf(1, "timed out waiting for the rollout of pod %q", name)
			}
			return apiFailure(err)
		}
		var line string
		switch ro.Phase {
		case status.RolloutProgressing:
			line = fmt.Sprintf("Waiting for pod %q rollout to finish: revision %d is not Ready for %s yet...", ro.Pod, ro.FileRevision, ro.MinReady)
			if ro.Deadline != nil {
				line += fmt.Sprintf(" (deadline %s)", ro.Deadline.Local().Format(time.TimeOnly))
			}
		case status.RolloutRolledBack:
			return exitf(1, "error: pod %q runs revision %d, not its manifest's revision %d: %s", ro.Pod, ro.Revision, ro.FileRevision, ro.Message)
		default:
			fmt.Fprintf(out, "pod %q successfully rolled out (revision %d)\n", ro.Pod, ro.Revision)
			return nil
		}
		if line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if !watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return exitf(1, "timed out waiting for the rollout of pod %q", name)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func newRolloutHistoryCommand(g *globalOptions) *cobra.Command {
	var (
		sel      podSelection
		revision int
	)
	cmd := &cobra.Command{
		Use:   "history POD [--revision N]",
		Short: "list the pod's revisions: number, hash, outcome, change cause (kubernetes.io/change-cause)",
		RunE: rolloutVerb(g, &sel, "history POD", func(cmd *cobra.Command, client *api.Client, name string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			ro, err := client.Rollout(ctx, name)
			if err != nil {
				return apiFailure(err)
			}
			return printHistory(cmd.OutOrStdout(), ro, revision)
		}),
	}
	sel.addNamespaceFlag(cmd.Flags())
	cmd.Flags().IntVar(&revision, "revision", 0, "show this revision's details (its outcome, message and the last status of a rolled back one)")
	return cmd
}

// printHistory prints kubectl's history table, with podvisor's columns.
func printHistory(out io.Writer, ro *status.Rollout, revision int) error {
	if revision > 0 {
		for _, r := range ro.Revisions {
			if r.Revision != revision {
				continue
			}
			fmt.Fprintf(out, "pod %q with revision #%d\n", ro.Pod, r.Revision)
			fmt.Fprintf(out, "Hash:\t%s\nCreated:\t%s\nOutcome:\t%s\nMessage:\t%s\nChange-Cause:\t%s\n", r.Hash, r.Created.Local().Format(time.RFC3339), none(r.Outcome), none(r.Message), none(r.ChangeCause))
			if r.Status != nil {
				fmt.Fprintln(out, "Last status:")
				for _, cs := range append(append(r.Status.InitContainerStatuses[:0:0], r.Status.InitContainerStatuses...), r.Status.ContainerStatuses...) {
					state := "running"
					switch {
					case cs.State.Waiting != nil:
						state = "waiting: " + cs.State.Waiting.Reason + " " + cs.State.Waiting.Message
					case cs.State.Terminated != nil:
						state = fmt.Sprintf("terminated: exit code %d %s", cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
					}
					fmt.Fprintf(out, "  %s:\tready=%t restarts=%d %s\n", cs.Name, cs.Ready, cs.RestartCount, strings.TrimSpace(state))
				}
			}
			return nil
		}
		return exitf(1, "pod %q has no revision %d", ro.Pod, revision)
	}
	fmt.Fprintf(out, "pod/%s\n", ro.Pod)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tHASH\tOUTCOME\tCHANGE-CAUSE\tMESSAGE")
	for _, r := range ro.Revisions {
		n := strconv.Itoa(r.Revision)
		if r.Revision == ro.Revision {
			n += " (running)"
		}
		fmt.Fprintf(tw, "%s\t%.10s\t%s\t%s\t%s\n", n, r.Hash, none(r.Outcome), none(r.ChangeCause), none(r.Message))
	}
	return tw.Flush()
}

func newRolloutUndoCommand(g *globalOptions) *cobra.Command {
	var (
		sel podSelection
		to  int
	)
	cmd := &cobra.Command{
		Use:   "undo POD [--to-revision N]",
		Short: "run the revision before the running one (or --to-revision N) until the manifest file changes",
		RunE: rolloutVerb(g, &sel, "undo POD [--to-revision N]", func(cmd *cobra.Command, client *api.Client, name string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			msg, err := client.RolloutUndo(ctx, name, to)
			if err != nil {
				return undoFailure(name, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		}),
	}
	sel.addNamespaceFlag(cmd.Flags())
	cmd.Flags().IntVar(&to, "to-revision", 0, "the revision to go back to (0: the one before the running one)")
	return cmd
}

// undoFailure says why an undo was not done. podvisor's refusals — 403
// on the TLS port (undo is root's, on the node's socket) and 422 for a
// revision that grants more than the manifest — read as a refusal, the
// privileges one a line.
func undoFailure(name string, err error) error {
	var ae *api.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Code {
	case http.StatusForbidden:
		return exitf(1, "error: rollout undo of pod %q refused: %s", name, ae.Message)
	case http.StatusUnprocessableEntity:
		if head, privileges, hint, ok := splitPrivileges(ae.Message); ok {
			return exitf(1, "error: rollout undo of pod %q refused: %s:\n  - %s\n%s", name, head, strings.Join(privileges, "\n  - "), hint)
		}
		return exitf(1, "error: %s", ae.Message)
	}
	return apiFailure(err)
}

// splitPrivileges splits the daemon's refusal of a revision with broader
// privileges ("...does not grant: A; B; only root grants ...") into its
// head, each privilege and the hint; ok is false for another message.
func splitPrivileges(msg string) (head string, privileges []string, hint string, ok bool) {
	const grant, root = " does not grant: ", "; only root grants "
	i, j := strings.Index(msg, grant), strings.LastIndex(msg, root)
	if i < 0 || j < i+len(grant) {
		return "", nil, "", false
	}
	return msg[:i+len(grant)-2], strings.Split(msg[i+len(grant):j], "; "), msg[j+2:], true
}

// none is s, or "<none>" when empty, as kubectl prints an unset value.
func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
