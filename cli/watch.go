package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"k8s.io/apimachinery/pkg/watch"
)

// watchPrinter prints a watch as kubectl get -w does: the table (or each
// object) of the list, then a row (an object) per change, the header only
// once. A relist prints only the rows that changed since printed.
type watchPrinter struct {
	w          io.Writer
	format     string
	withEvents bool // --output-watch-events
	header     []string
	// other prints one object in a format other than a table, json or
	// yaml (name, jsonpath, custom-columns) with the options given.
	other   func(w io.Writer, obj any, o printers.Options) error
	opts    printers.Options
	table   printers.Table
	printed bool              // the header is out
	pending [][]string        // table rows not printed yet
	last    map[string]string // key → the row last printed, for relists
	now     func() time.Time
}

func newWatchPrinter(w io.Writer, o *getOptions, header []string) *watchPrinter {
	p := &watchPrinter{w: w, format: o.print.Output, opts: o.print, withEvents: o.watchEvents,
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
	case "", "wide":
	default:
		// name, jsonpath, custom-columns: each object as it comes, a
		// custom-columns header only once.
		po := p.opts
		po.NoHeaders = po.NoHeaders || p.printed
		p.printed = true
		return p.other(p.w, obj, po)
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
	if !p.printed && !p.opts.NoHeaders {
		rows = append([][]string{p.header}, rows...)
	}
	p.printed = true
	return p.table.Print(p.w, rows...)
}

func (p *watchPrinter) notice(stderr io.Writer) func(string) {
	return func(msg string) { fmt.Fprintln(stderr, "podvisor: "+msg) }
}
