package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cli/printers"
	"github.com/podvisor/podvisor/status"
	"github.com/urfave/cli/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// watchFlags are kubectl get's watch flags.
func watchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "after listing, print a line for each change (kubectl get -w)"},
		&cli.BoolFlag{Name: "watch-only", Usage: "print only the changes, not the list first"},
		&cli.BoolFlag{Name: "output-watch-events", Usage: "with --watch, show each change's type (ADDED, MODIFIED, DELETED) as an EVENT column"},
	}
}

// getPodsFlags are the flags of podvisor get pods.
func getPodsFlags(socketFlag cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		socketFlag,
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: wide, json or yaml"},
	}, watchFlags()...)
}

// getEventsCommand is podvisor get events.
func getEventsCommand(socketFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:    "events",
		Aliases: []string{"event", "ev"},
		Usage:   "list events as kubectl get events does, oldest first (-w: and follow new ones)",
		Flags: append([]cli.Flag{
			socketFlag,
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: wide, json or yaml"},
		}, append(watchFlags(), clientFlags()...)...),
		Action: getEventsAction,
	}
}

func checkFormat(format string) error {
	switch format {
	case "", "wide", "json", "yaml":
		return nil
	}
	return cli.Exit(fmt.Sprintf("unknown output format %q: want one of wide, json, yaml", format), 2)
}

func getPodsAction(c *cli.Context) error {
	if err := checkFormat(c.String("output")); err != nil {
		return err
	}
	if c.Bool("watch") || c.Bool("watch-only") {
		return watchPodsAction(c)
	}
	client, err := newAPIClient(c)
	if err != nil {
		return err
	}
	list, err := client.Pods(c.Context)
	if err != nil {
		return err
	}
	if names := c.Args().Slice(); len(names) > 0 {
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
			return cli.Exit(fmt.Sprintf("pod %q not found", strings.Join(names, ", ")), 1)
		}
		list.Items = keep
	}
	format := c.String("output")
	if len(list.Items) == 0 && (format == "" || format == "wide") {
		fmt.Fprintln(c.App.ErrWriter, "No resources found")
		return nil
	}
	if err := printers.PrintPods(c.App.Writer, list, format, time.Now()); err != nil {
		return cli.Exit(err.Error(), 2)
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

// watchPrinter prints a watch as kubectl get -w does: the table (or each
// object) of the list, then a row (an object) per change, the header only
// once. A relist prints only the rows that changed since printed.
type watchPrinter struct {
	w          io.Writer
	format     string
	withEvents bool // --output-watch-events
	header     []string
	table      printers.Table
	printed    bool              // the header is out
	pending    [][]string        // table rows not printed yet
	last       map[string]string // key → the row last printed, for relists
	now        func() time.Time
}

func newWatchPrinter(c *cli.Context, header []string) *watchPrinter {
	p := &watchPrinter{w: c.App.Writer, format: c.String("output"), withEvents: c.Bool("output-watch-events"),
		header: header, last: map[string]string{}, now: time.Now}
	if p.withEvents {
		p.header = append([]string{"EVENT"}, header...)
	}
	return p
}

// print prints one object's change (a table row at the next flush);
// onlyIfChanged skips it when its row is
// the one last printed for key (a relist).
func (p *watchPrinter) print(typ watch.EventType, key string, obj any, row []string, onlyIfChanged bool) error {
	switch p.format {
	case "json", "yaml":
		var v any = obj
		if p.withEvents {
			v = struct {
				Type   watch.EventType `json:"type"`
				Object any             `json:"object"`
			}{typ, obj}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if onlyIfChanged && p.last[key] == string(b) {
			return nil
		}
		p.last[key] = string(b)
		if p.format == "yaml" {
			if p.printed {
				fmt.Fprintln(p.w, "---")
			}
			p.printed = true
		}
		return printers.PrintObject(p.w, v, p.format)
	}
	if p.withEvents {
		row = append([]string{string(typ)}, row...)
	}
	joined := strings.Join(row, "\t")
	if onlyIfChanged && p.last[key] == joined {
		return nil
	}
	p.last[key] = joined
	p.pending = append(p.pending, row)
	return nil
}

// flush prints the table rows given since the last flush, as one table:
// a list's rows line up with each other.
func (p *watchPrinter) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	rows := p.pending
	p.pending = nil
	if !p.printed {
		rows = append([][]string{p.header}, rows...)
		p.printed = true
	}
	return p.table.Print(p.w, rows...)
}

func (p *watchPrinter) notice(c *cli.Context) func(string) {
	return func(msg string) { fmt.Fprintln(c.App.ErrWriter, "podvisor: "+msg) }
}

func watchPodsAction(c *cli.Context) error {
	wide := c.String("output") == "wide"
	p := newWatchPrinter(c, printers.PodHeader(wide))
	match := nameMatcher(c.Args().Slice())
	show := func(typ watch.EventType, pod *v1.Pod, relist bool) error {
		return p.print(typ, string(pod.UID), pod, printers.PodRow(pod, wide, p.now()), relist)
	}
	client, err := newAPIClient(c)
	if err != nil {
		return err
	}
	return client.WatchPods(c.Context, api.WatchOptions[v1.Pod]{
		List: func(items []v1.Pod, relist bool) error {
			if c.Bool("watch-only") && !relist {
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
		Notice: p.notice(c),
	})
}

func getEventsAction(c *cli.Context) error {
	format := c.String("output")
	if err := checkFormat(format); err != nil {
		return err
	}
	if c.NArg() > 0 {
		return cli.Exit("usage: podvisor get events [-o wide|json|yaml] [-w]", 2)
	}
	client, err := newAPIClient(c)
	if err != nil {
		return err
	}
	if !c.Bool("watch") && !c.Bool("watch-only") {
		list, err := client.Events(c.Context)
		if err != nil {
			return err
		}
		if len(list.Items) == 0 && (format == "" || format == "wide") {
			fmt.Fprintln(c.App.ErrWriter, "No events found")
			return nil
		}
		return printers.PrintEvents(c.App.Writer, list, format, time.Now())
	}
	wide := format == "wide"
	p := newWatchPrinter(c, printers.EventHeader(wide))
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
	return client.WatchEvents(c.Context, api.WatchOptions[v1.Event]{
		List: func(items []v1.Event, relist bool) error {
			if c.Bool("watch-only") && !relist {
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
		Notice: p.notice(c),
	})
}
