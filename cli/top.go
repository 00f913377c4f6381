package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"github.com/podvisor/podvisor/internal/stats"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// topRequestTimeout bounds each /stats request of podvisor top.
const topRequestTimeout = 10 * time.Second

// ANSI sequences of the terminal view: the alternate screen (so the shell's
// screen comes back on exit, as with watch), a hidden cursor, and a redraw
// from the top left corner.
const (
	ansiEnter  = "\x1b[?1049h\x1b[?25l"
	ansiLeave  = "\x1b[?25h\x1b[?1049l"
	ansiRedraw = "\x1b[H\x1b[2J"
)

// topOptions are podvisor top's flags.
type topOptions struct {
	interval time.Duration
	watch    bool
}

func newTopCommand(g *globalOptions) *cobra.Command {
	o := &topOptions{}
	cmd := &cobra.Command{
		Use:   "top",
		Short: "show each pod's and container's CPU, memory, restarts and probes, refreshed in place (top pod: kubectl's)",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return o.run(cmd, g) },
	}
	cmd.Flags().DurationVar(&o.interval, "interval", 2*time.Second, "time between refreshes, and between the two samples CPU use is computed from")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "when not on a terminal, print the table again at every refresh instead of once")
	cmd.AddCommand(newTopPodCommand(g))
	return cmd
}

func (o *topOptions) run(cmd *cobra.Command, g *globalOptions) error {
	interval, ctx := o.interval, cmd.Context()
	if interval <= 0 {
		return usageErrorf("--interval %s: must be more than 0", interval)
	}
	client, err := g.client()
	if err != nil {
		return err
	}
	sample := func() (*stats.Summary, error) {
		ctx, cancel := context.WithTimeout(ctx, topRequestTimeout)
		defer cancel()
		return client.Stats(ctx)
	}
	out := cmd.OutOrStdout()
	f, isFile := out.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))

	prev, err := sample()
	if err != nil {
		return err
	}
	if tty {
		fmt.Fprint(out, ansiEnter)
		defer fmt.Fprint(out, ansiLeave)
		// A first frame at once, CPU unknown until the second sample.
		redraw(out, f, topRows(nil, prev))
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil // Ctrl-C: the usual way to leave
		case <-t.C:
		}
		cur, err := sample()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		rows := topRows(prev, cur)
		prev = cur
		switch {
		case tty:
			redraw(out, f, rows)
		case o.watch:
			if n > 0 {
				fmt.Fprintln(out)
			}
			writeTop(out, rows)
		default:
			writeTop(out, rows)
			return nil
		}
	}
}

// redraw draws the table from the top left corner of a cleared screen,
// each line cut to the terminal's width (read again each time, so a
// resized window is followed) so that none wraps.
func redraw(out io.Writer, f *os.File, rows []topRow) {
	var b bytes.Buffer
	writeTop(&b, rows)
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 {
		width = 1 << 16
	}
	var frame strings.Builder
	frame.WriteString(ansiRedraw)
	for line := range strings.Lines(b.String()) {
		line = strings.TrimSuffix(line, "\n")
		if len(line) > width {
			line = line[:width]
		}
		frame.WriteString(line + "\n")
	}
	io.WriteString(out, frame.String())
}

// topRow is one line of podvisor top: a pod (Container empty) with its
// containers' totals, or one of its containers.
type topRow struct {
	Namespace, Pod, Container string
	// MilliCPU is the CPU use in millicores between the two samples; -1
	// when unknown (one sample only, or a container that restarted or
	// is not running).
	MilliCPU int64
	// Memory is the working set in bytes; -1 when not running.
	Memory   int64
	Restarts int32
	State    string
	Started  string // true/false, "-" for none or a pod
	Ready    string // true/false, or ready/total for a pod
	Probes   string // "liveness=Success,readiness=Failure", "-" for none
}

// topRows computes the rows from two samples of /stats; prev may be nil.
func topRows(prev, cur *stats.Summary) []topRow {
	milliCPU := printers.CPUSince(prev)
	var rows []topRow
	for _, p := range cur.Pods {
		pod := topRow{Namespace: p.Namespace, Pod: p.Name, MilliCPU: -1, Memory: -1, State: p.Phase, Started: "-", Probes: "-"}
		var ready, total int
		var cpuKnown, cpuMissing, memKnown bool
		var cpuSum, memSum int64
		var crow []topRow
		for _, c := range p.Containers {
			r := topRow{Namespace: p.Namespace, Pod: p.Name, Container: c.Name, MilliCPU: -1, Memory: -1,
				Restarts: c.RestartCount, State: c.State, Started: "-", Ready: fmt.Sprint(c.Ready), Probes: probesText(c.Probes)}
			if c.Reason != "" {
				r.State += " (" + c.Reason + ")"
			}
			if c.Started != nil {
				r.Started = fmt.Sprint(*c.Started)
			}
			if m := milliCPU(&p, &c); m >= 0 {
				r.MilliCPU = m
				cpuSum += m
				cpuKnown = true
			} else if c.CPU != nil {
				cpuMissing = true // running, but not over the whole interval
			}
			if c.Memory != nil {
				r.Memory = int64(c.Memory.WorkingSetBytes)
				memSum += r.Memory
				memKnown = true
			}
			pod.Restarts += c.RestartCount
			if !c.Init {
				total++
				if c.Ready {
					ready++
				}
			}
			crow = append(crow, r)
		}
		if cpuKnown && !cpuMissing {
			pod.MilliCPU = cpuSum
		}
		if memKnown {
			pod.Memory = memSum
		}
		pod.Ready = fmt.Sprintf("%d/%d", ready, total)
		rows = append(rows, pod)
		rows = append(rows, crow...)
	}
	return rows
}

func probesText(p map[string]string) string {
	if len(p) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, k+"="+p[k])
	}
	return strings.Join(parts, ",")
}

// writeTop prints the rows as kubectl top does: CPU in millicores, memory
// in Mi.
func writeTop(w io.Writer, rows []topRow) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCONTAINER\tCPU(cores)\tMEMORY(bytes)\tRESTARTS\tSTATE\tSTARTED\tREADY\tPROBES")
	for _, r := range rows {
		cpu, mem, container := "-", "-", r.Container
		if r.MilliCPU >= 0 {
			cpu = fmt.Sprintf("%dm", r.MilliCPU)
		}
		if r.Memory >= 0 {
			mem = fmt.Sprintf("%dMi", r.Memory/(1<<20))
		}
		if container == "" {
			container = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Namespace, r.Pod, container, cpu, mem, r.Restarts, r.State, r.Started, r.Ready, r.Probes)
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, "(no pods)")
	}
	tw.Flush()
}
