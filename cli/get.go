package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cli/printers"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// getOptions are the flags of podvisor get pods and get events.
type getOptions struct {
	print       printers.Options
	sel         podSelection
	watch       bool
	watchOnly   bool
	watchEvents bool
}

func (o *getOptions) addFlags(fs *pflag.FlagSet, pods bool) {
	fs.StringVarP(&o.print.Output, "output", "o", "", "output format: wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC or custom-columns-file=FILE")
	fs.BoolVar(&o.print.NoHeaders, "no-headers", false, "leave out the header line of tables and custom columns")
	fs.StringVar(&o.print.SortBy, "sort-by", "", "sort by a JSONPath expression such as .metadata.name or '{.status.startTime}'")
	fs.BoolVarP(&o.watch, "watch", "w", false, "after listing, print a line for each change (kubectl get -w)")
	fs.BoolVar(&o.watchOnly, "watch-only", false, "print only the changes, not the list first")
	fs.BoolVar(&o.watchEvents, "output-watch-events", false, "with --watch, show each change's type (ADDED, MODIFIED, DELETED) as an EVENT column")
	if pods {
		o.sel.addFlags(fs)
		fs.BoolVar(&o.print.ShowLabels, "show-labels", false, "show each pod's labels as a LABELS column")
		return
	}
	o.sel.addNamespaceFlag(fs)
	fs.BoolVarP(&o.sel.allNamespaces, "all-namespaces", "A", false, "every namespace (podvisor's default too), with a NAMESPACE column")
}

// check refuses flags that cannot be used, before the daemon is asked.
func (o *getOptions) check() error {
	o.print.AllNamespaces = o.sel.allNamespaces
	if err := o.print.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// newGetCommand is podvisor get pods|events, and get pod/NAME as kubectl's
// TYPE/NAME form.
func newGetCommand(g *globalOptions) *cobra.Command {
	pods := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get",
		Short: "show pods, events, ConfigMaps, Secrets or the node (podvisor get pods|events|configmaps|secrets|node|pod/NAME [-o wide|json|yaml|name|jsonpath=...] [-n NS] [-l SEL] [-w])",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			if k, names, ok, err := objectArgs(args); ok {
				if err != nil {
					return err
				}
				if pods.watch || pods.watchOnly {
					return usageErrorf("--watch: podvisor watches pods and events only")
				}
				o := &objectOptions{print: pods.print, sel: pods.sel}
				return o.get(cmd, g, k, names)
			}
			if err := typeNameArgs(cmd, args); err != nil {
				return err
			}
			return pods.getPods(cmd, g, args)
		},
	}
	pods.addFlags(cmd.Flags(), true)
	podsCmd := &cobra.Command{
		Use:     "pods [NAME...]",
		Aliases: []string{"pod", "po"},
		Short:   "list pods with their status (default: every namespace; -n NAMESPACE for one)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return pods.getPods(cmd, g, args)
		},
	}
	pods.addFlags(podsCmd.Flags(), true)
	events := &getOptions{}
	eventsCmd := &cobra.Command{
		Use:     "events",
		Aliases: []string{"event", "ev"},
		Short:   "list events as kubectl get events does, oldest first (-w: and follow new ones)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("usage: podvisor get events [-o wide|json|yaml] [-n NAMESPACE|-A] [-w]")
			}
			return events.getEvents(cmd, g)
		},
	}
	events.addFlags(eventsCmd.Flags(), false)
	cmd.AddCommand(podsCmd, eventsCmd, newGetObjectsCommand(g, configMapKind), newGetObjectsCommand(g, secretKind), newGetObjectsCommand(g, claimKind), newGetNodeCommand(g))
	return cmd
}

// noResources prints kubectl's line for an empty list, on stderr.
func noResources(w io.Writer, ns string) {
	if ns != "" {
		fmt.Fprintf(w, "No resources found in %s namespace.\n", ns)
		return
	}
	fmt.Fprintln(w, "No resources found")
}

func (o *getOptions) getPods(cmd *cobra.Command, g *globalOptions, names []string) error {
	if err := o.check(); err != nil {
		return err
	}
	match, err := o.sel.matcher(names)
	if err != nil {
		return err
	}
	client, err := g.client()
	if err != nil {
		return err
	}
	if o.watch || o.watchOnly {
		return o.watchPods(cmd, client, match)
	}
	list, err := client.Pods(cmd.Context())
	if err != nil {
		return err
	}
	if list.Items, err = o.sel.filter(list.Items, names); err != nil {
		return err
	}
	if len(list.Items) == 0 && o.print.Output != "json" && o.print.Output != "yaml" {
		// kubectl's line; -o json and yaml print the empty List instead.
		noResources(cmd.ErrOrStderr(), o.sel.ns())
		return nil
	}
	return printers.Pods(cmd.OutOrStdout(), list, len(names) == 1, o.print, time.Now())
}

func (o *getOptions) watchPods(cmd *cobra.Command, client *api.Client, match func(*v1.Pod) bool) error {
	p := newWatchPrinter(cmd.OutOrStdout(), o, o.print.PodHeader())
	p.other = func(w io.Writer, obj any, po printers.Options) error {
		pod := obj.(*v1.Pod)
		return printers.Pods(w, &v1.PodList{Items: []v1.Pod{*pod}}, true, po, p.now())
	}
	show := func(typ watch.EventType, pod *v1.Pod, relist bool) error {
		return p.print(typ, string(pod.UID), pod, o.print.PodRow(pod, p.now()), relist)
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

// eventNamespace is the namespace an event is about: its own, else its
// object's.
func eventNamespace(e *v1.Event) string {
	if e.Namespace != "" {
		return e.Namespace
	}
	return e.InvolvedObject.Namespace
}

func (o *getOptions) getEvents(cmd *cobra.Command, g *globalOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	ns := o.sel.ns()
	keep := func(e *v1.Event) bool { return ns == "" || eventNamespace(e) == ns }
	client, err := g.client()
	if err != nil {
		return err
	}
	if !o.watch && !o.watchOnly {
		list, err := client.Events(cmd.Context())
		if err != nil {
			return err
		}
		var items []v1.Event
		for i := range list.Items {
			if keep(&list.Items[i]) {
				items = append(items, list.Items[i])
			}
		}
		list.Items = items
		if len(list.Items) == 0 && o.print.Output != "json" && o.print.Output != "yaml" {
			if ns != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "No events found in %s namespace.\n", ns)
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "No events found")
			}
			return nil
		}
		return printers.Events(cmd.OutOrStdout(), list, o.print, time.Now())
	}
	p := newWatchPrinter(cmd.OutOrStdout(), o, o.print.EventHeader())
	p.other = func(w io.Writer, obj any, po printers.Options) error {
		return printers.Events(w, &v1.EventList{Items: []v1.Event{*obj.(*v1.Event)}}, po, p.now())
	}
	show := func(typ watch.EventType, e *v1.Event, relist bool) error {
		if !keep(e) {
			return nil
		}
		e.APIVersion, e.Kind = "v1", "Event"
		// A relist (podvisor restarted) prints only events new or
		// updated since: the count says so, not the LAST SEEN column.
		key := e.Name
		if relist && p.last[key+"#count"] == fmt.Sprint(e.Count) {
			return nil
		}
		p.last[key+"#count"] = fmt.Sprint(e.Count)
		return p.print(typ, key, e, o.print.EventRow(e, p.now()), false)
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
