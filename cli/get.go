package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cli/printers"
	"github.com/podvisor/podvisor/status"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// getOptions are the flags of podvisor get pods and get events.
type getOptions struct {
	output      string
	watch       bool
	watchOnly   bool
	watchEvents bool
}

func (o *getOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	fs.BoolVarP(&o.watch, "watch", "w", false, "after listing, print a line for each change (kubectl get -w)")
	fs.BoolVar(&o.watchOnly, "watch-only", false, "print only the changes, not the list first")
	fs.BoolVar(&o.watchEvents, "output-watch-events", false, "with --watch, show each change's type (ADDED, MODIFIED, DELETED) as an EVENT column")
}

func (o *getOptions) checkFormat() error {
	switch o.output {
	case "", "wide", "json", "yaml":
		return nil
	}
	return usageErrorf("unknown output format %q: want one of wide, json, yaml", o.output)
}

// newGetCommand is podvisor get pods|events.
func newGetCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "show pods or events (podvisor get pods|events [-o wide|json|yaml] [-w])",
		RunE:  parentRun,
	}
	pods := &getOptions{}
	podsCmd := &cobra.Command{
		Use:     "pods [NAME...]",
		Aliases: []string{"pod", "po"},
		Short:   "list pods with their status",
		RunE: func(cmd *cobra.Command, args []string) error {
			return pods.getPods(cmd, g, args)
		},
	}
	pods.addFlags(podsCmd.Flags())
	events := &getOptions{}
	eventsCmd := &cobra.Command{
		Use:     "events",
		Aliases: []string{"event", "ev"},
		Short:   "list events as kubectl get events does, oldest first (-w: and follow new ones)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("usage: podvisor get events [-o wide|json|yaml] [-w]")
			}
			return events.getEvents(cmd, g)
		},
	}
	events.addFlags(eventsCmd.Flags())
	cmd.AddCommand(podsCmd, eventsCmd)
	return cmd
}

func (o *getOptions) getPods(cmd *cobra.Command, g *globalOptions, names []string) error {
	if err := o.checkFormat(); err != nil {
		return err
	}
	client, err := g.client()
	if err != nil {
		return err
	}
	if o.watch || o.watchOnly {
		return o.watchPods(cmd, client, names)
	}
	list, err := client.Pods(cmd.Context())
	if err != nil {
		return err
	}
	if len(names) > 0 {
		// The API's lookup, name by name: "namespace/name" narrows it, and
		// an ambiguous name shows every pod it matches.
		want := map[types.UID]bool{}
		for _, arg := range names {
			namespace, name, ok := strings.Cut(arg, "/")
			if !ok {
				namespace, name = "", arg
			}
			for _, p := range status.FindPods(list.Items, name, namespace) {
				want[p.UID] = true
			}
		}
		var keep []v1.Pod
		for _, p := range list.Items {
			if want[p.UID] {
				keep = append(keep, p)
			}
		}
		if len(keep) == 0 {
			return exitf(1, "pod %q not found", strings.Join(names, ", "))
		}
		list.Items = keep
	}
	if len(list.Items) == 0 && (o.output == "" || o.output == "wide") {
		fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
		return nil
	}
	if err := printers.PrintPods(cmd.OutOrStdout(), list, o.output, time.Now()); err != nil {
		return usageError{err}
	}
	return nil
}

// nameMatcher reports whether a pod is one of those the arguments name
// (all with none): its full name or its manifest's name, in the namespace
// given as "namespace/name".
func nameMatcher(args []string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		if len(args) == 0 {
			return true
		}
		for _, arg := range args {
			ns, name, ok := strings.Cut(arg, "/")
			if !ok {
				ns, name = "", arg
			}
			if (ns == "" || ns == p.Namespace) && (p.Name == name || p.Annotations[status.ManifestNameAnnotation] == name) {
				return true
			}
		}
		return false
	}
}

func (o *getOptions) watchPods(cmd *cobra.Command, client *api.Client, names []string) error {
	wide := o.output == "wide"
	p := newWatchPrinter(cmd.OutOrStdout(), o, printers.PodHeader(wide))
	match := nameMatcher(names)
	show := func(typ watch.EventType, pod *v1.Pod, relist bool) error {
		return p.print(typ, string(pod.UID), pod, printers.PodRow(pod, wide, p.now()), relist)
	}
	return client.WatchPods(cmd.Context(), api.WatchOptions[v1.Pod]{
		List: func(items []v1.Pod, relist bool) error {
			if o.watchOnly && !relist {
				return nil
			}
			for i := range items {
				if match(&items[i]) {
					if err := show(watch.Added, &items[i], relist); err != nil {
						return err
					}
				}
			}
			return p.flush()
		},
		Change: func(typ watch.EventType, pod *v1.Pod) error {
			if !match(pod) {
				return nil
			}
			if err := show(typ, pod, false); err != nil {
				return err
			}
			return p.flush()
		},
		Notice: p.notice(cmd.ErrOrStderr()),
	})
}

func (o *getOptions) getEvents(cmd *cobra.Command, g *globalOptions) error {
	if err := o.checkFormat(); err != nil {
		return err
	}
	client, err := g.client()
	if err != nil {
		return err
	}
	if !o.watch && !o.watchOnly {
		list, err := client.Events(cmd.Context())
		if err != nil {
			return err
		}
		if len(list.Items) == 0 && (o.output == "" || o.output == "wide") {
			fmt.Fprintln(cmd.ErrOrStderr(), "No events found")
			return nil
		}
		return printers.PrintEvents(cmd.OutOrStdout(), list, o.output, time.Now())
	}
	wide := o.output == "wide"
	p := newWatchPrinter(cmd.OutOrStdout(), o, printers.EventHeader(wide))
	show := func(typ watch.EventType, e *v1.Event, relist bool) error {
		e.APIVersion, e.Kind = "v1", "Event"
		// A relist (podvisor restarted) prints only events new or
		// updated since: the count says so, not the LAST SEEN column.
		key := e.Name
		if relist && p.last[key+"#count"] == fmt.Sprint(e.Count) {
			return nil
		}
		p.last[key+"#count"] = fmt.Sprint(e.Count)
		return p.print(typ, key, e, printers.EventRow(e, wide, p.now()), false)
	}
	return client.WatchEvents(cmd.Context(), api.WatchOptions[v1.Event]{
		List: func(items []v1.Event, relist bool) error {
			if o.watchOnly && !relist {
				for i := range items {
					p.last[items[i].Name+"#count"] = fmt.Sprint(items[i].Count)
				}
				return nil
			}
			printers.SortEvents(items)
			for i := range items {
				if err := show(watch.Added, &items[i], relist); err != nil {
					return err
				}
			}
			return p.flush()
		},
		Change: func(typ watch.EventType, e *v1.Event) error {
			if err := show(typ, e, false); err != nil {
				return err
			}
			return p.flush()
		},
		Notice: p.notice(cmd.ErrOrStderr()),
	})
}
