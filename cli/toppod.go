package cli

import (
	"context"
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"github.com/podvisor/podvisor/internal/stats"
	"github.com/spf13/cobra"
)

// topPodOptions are podvisor top pod's flags, kubectl top pod's.
type topPodOptions struct {
	print    printers.Options
	sel      podSelection
	interval time.Duration
}

// newTopPodCommand is podvisor top pod [NAME...], as kubectl top pod.
func newTopPodCommand(g *globalOptions) *cobra.Command {
	o := &topPodOptions{}
	cmd := &cobra.Command{
		Use:     "pod [NAME...]",
		Aliases: []string{"pods", "po"},
		Short:   "show the pods' CPU and memory once, as kubectl top pod does",
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, g, args) },
	}
	fs := cmd.Flags()
	o.sel.addFlags(fs)
	fs.BoolVar(&o.print.Containers, "containers", false, "a row per container: POD NAME CPU(cores) MEMORY(bytes)")
	fs.StringVar(&o.print.SortBy, "sort-by", "", "sort by cpu or memory, highest first (default: by namespace and name)")
	fs.BoolVar(&o.print.NoHeaders, "no-headers", false, "leave out the header line")
	fs.DurationVar(&o.interval, "interval", time.Second, "time between the two samples CPU use is computed from")
	return cmd
}

func (o *topPodOptions) run(cmd *cobra.Command, g *globalOptions, args []string) error {
	o.print.AllNamespaces = o.sel.allNamespaces
	if err := o.print.Validate(); err != nil {
		return usageError{err}
	}
	if o.print.SortBy != "" && o.print.SortBy != "cpu" && o.print.SortBy != "memory" {
		return usageErrorf("--sort-by %q: want cpu or memory", o.print.SortBy)
	}
	if o.interval <= 0 {
		return usageErrorf("--interval %s: must be more than 0", o.interval)
	}
	if _, err := o.sel.matcher(args); err != nil {
		return err
	}
	ctx := cmd.Context()
	client, err := g.client()
	if err != nil {
		return err
	}
	list, err := client.Pods(ctx)
	if err != nil {
		return err
	}
	pods, err := o.sel.filter(list.Items, args)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, p := range pods {
		keep[string(p.UID)] = true
	}
	sample := func() (*stats.Summary, error) {
		ctx, cancel := context.WithTimeout(ctx, topRequestTimeout)
		defer cancel()
		s, err := client.Stats(ctx)
		if err != nil {
			return nil, err
		}
		var sel []stats.Pod
		for _, p := range s.Pods {
			if keep[p.UID] {
				sel = append(sel, p)
			}
		}
		s.Pods = sel
		return s, nil
	}
	prev, err := sample()
	if err != nil {
		return err
	}
	t := time.NewTimer(o.interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	cur, err := sample()
	if err != nil {
		return err
	}
	if len(cur.Pods) == 0 {
		noResources(cmd.ErrOrStderr(), o.sel.ns())
		return nil
	}
	return printers.TopPods(cmd.OutOrStdout(), prev, cur, o.print)
}
