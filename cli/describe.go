package cli

import (
	"bytes"
	"fmt"
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"github.com/spf13/cobra"
)

// describeOptions are podvisor describe's flags.
type describeOptions struct {
	sel podSelection
}

func (o *describeOptions) addFlags(cmd *cobra.Command) {
	o.sel.addNamespaceFlag(cmd.Flags())
	cmd.Flags().StringVarP(&o.sel.selector, "selector", "l", "", "label selector to filter on, as kubectl's (-l app=web)")
}

// newDescribeCommand is podvisor describe pod [NAME...], and describe
// pod/NAME as kubectl's TYPE/NAME form.
func newDescribeCommand(g *globalOptions) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "show pods, ConfigMaps, Secrets or the node in detail (podvisor describe pod|configmap|secret [NAME...] | node | pod/NAME)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			if k, names, ok, err := objectArgs(args); ok {
				if err != nil {
					return err
				}
				return (&objectOptions{sel: o.sel}).describe(cmd, g, k, names)
			}
			if err := typeNameArgs(cmd, args); err != nil {
				return err
			}
			return o.run(cmd, g, args)
		},
	}
	o.addFlags(cmd)
	pod := &cobra.Command{
		Use:     "pod [NAME...]",
		Aliases: []string{"pods", "po"},
		Short:   "show pods in detail, as kubectl describe pod does (no name: every pod)",
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, g, args) },
	}
	o.addFlags(pod)
	cmd.AddCommand(pod, newDescribeObjectsCommand(g, configMapKind), newDescribeObjectsCommand(g, secretKind), newDescribeObjectsCommand(g, claimKind), newDescribeNodeCommand(g))
	return cmd
}

func (o *describeOptions) run(cmd *cobra.Command, g *globalOptions, args []string) error {
	if _, err := o.sel.matcher(args); err != nil {
		return err
	}
	client, err := g.client()
	if err != nil {
		return err
	}
	list, err := client.Pods(cmd.Context())
	if err != nil {
		return err
	}
	pods, err := o.sel.filter(list.Items, args)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		noResources(cmd.ErrOrStderr(), o.sel.ns())
		return nil
	}
	events, err := client.Events(cmd.Context())
	if err != nil {
		return err
	}
	now := time.Now()
	var out bytes.Buffer
	for i := range pods {
		if i > 0 {
			out.WriteString("\n\n") // kubectl's separator between objects
		}
		out.WriteString(stuckLine(cmd.Context(), client, &pods[i], events.Items))
		if err := printers.PrintDescribe(&out, &pods[i], events.Items, now); err != nil {
			return fmt.Errorf("describe pod %s: %w", pods[i].Name, err)
		}
	}
	_, err = out.WriteTo(cmd.OutOrStdout())
	return err
}
