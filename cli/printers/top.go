package printers

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/podvisor/podvisor/internal/stats"
)

// TopPods prints the pods' resource use between two samples of /stats
// (prev may be nil) as kubectl top pod does: NAME CPU(cores) MEMORY(bytes),
// CPU in millicores ("12m") and memory (the working set) in Mi ("34Mi");
// with o.Containers a row per container, POD NAME CPU(cores) MEMORY(bytes);
// with o.AllNamespaces a NAMESPACE column first; o.NoHeaders leaves the
// header out. Like kubectl it lists only pods with a running container
// (others have no metrics), by namespace and name, or by o.SortBy "cpu" or
// "memory", highest first. CPU that two samples cannot tell (one sample
// only, or a container that restarted in between) is <unknown>. Any other
// Output or SortBy is an error.
func TopPods(w io.Writer, prev, cur *stats.Summary, o Options) error {
	if o.Output != "" {
		return fmt.Errorf("unknown output format %q: top prints a table only", o.Output)
	}
	if o.SortBy != "" && o.SortBy != "cpu" && o.SortBy != "memory" {
		return fmt.Errorf("--sort-by %q: top sorts by cpu or memory", o.SortBy)
	}
	milliCPU := CPUSince(prev)
	type usage struct {
		name     string
		milliCPU int64 // -1: unknown
		memory   int64
	}
	type podUsage struct {
		namespace string
		usage
		containers []usage
	}
	var pods []podUsage
	if cur != nil {
		for _, p := range cur.Pods {
			pu := podUsage{namespace: p.Namespace, usage: usage{name: p.Name}}
			for _, c := range p.Containers {
				if c.CPU == nil && c.Memory == nil {
					continue // not running: no metrics
				}
				u := usage{name: c.Name, milliCPU: milliCPU(&p, &c)}
				if c.Memory != nil {
					u.memory = int64(c.Memory.WorkingSetBytes)
				}
				pu.containers = append(pu.containers, u)
				pu.memory += u.memory
				if u.milliCPU < 0 || pu.milliCPU < 0 {
					pu.milliCPU = -1
				} else {
					pu.milliCPU += u.milliCPU
				}
			}
			if len(pu.containers) > 0 {
				pods = append(pods, pu)
			}
		}
	}
	slices.SortStableFunc(pods, func(a, b podUsage) int {
		switch o.SortBy {
		case "cpu":
			return cmp.Compare(b.milliCPU, a.milliCPU)
		case "memory":
			return cmp.Compare(b.memory, a.memory)
		}
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	if len(pods) == 0 {
		return nil
	}
	o.ShowLabels = false // top has no labels to show

	cells := func(u usage) []string {
		cpu := "<unknown>"
		if u.milliCPU >= 0 {
			cpu = fmt.Sprintf("%dm", u.milliCPU)
		}
		return []string{cpu, fmt.Sprintf("%dMi", u.memory/(1<<20))}
	}
	var rows [][]string
	if !o.NoHeaders {
		h := []string{"NAME", "CPU(cores)", "MEMORY(bytes)"}
		if o.Containers {
			h = append([]string{"POD"}, h...)
		}
		rows = append(rows, o.decorate(h, "NAMESPACE", ""))
	}
	for _, p := range pods {
		if !o.Containers {
			rows = append(rows, o.decorate(append([]string{p.name}, cells(p.usage)...), p.namespace, ""))
			continue
		}
		for _, c := range p.containers {
			rows = append(rows, o.decorate(append([]string{p.name, c.name}, cells(c)...), p.namespace, ""))
		}
	}
	return (&Table{}).Print(w, rows...)
}

// CPUSince returns the CPU use, in millicores, of a container of a later
// sample since the sample prev (which may be nil), as MilliCPU tells it.
func CPUSince(prev *stats.Summary) func(p *stats.Pod, c *stats.Container) int64 {
	before := map[string]*stats.Container{}
	if prev != nil {
		for i := range prev.Pods {
			p := &prev.Pods[i]
			for j := range p.Containers {
				before[p.UID+"/"+p.Containers[j].Name] = &p.Containers[j]
			}
		}
	}
	return func(p *stats.Pod, c *stats.Container) int64 { return MilliCPU(before[p.UID+"/"+c.Name], c) }
}

// MilliCPU is the CPU use of one container instance between two samples
// in millicores, or -1 when they cannot tell: one is missing, has no CPU
// figure, or is of another instance (the container restarted), or the
// time or the counter went backwards.
func MilliCPU(prev, cur *stats.Container) int64 {
	if prev == nil || cur == nil || prev.CPU == nil || cur.CPU == nil || prev.ID != cur.ID {
		return -1
	}
	dt := cur.CPU.Time.Sub(prev.CPU.Time)
	if dt <= 0 || cur.CPU.UsageCoreNanoSeconds < prev.CPU.UsageCoreNanoSeconds {
		return -1
	}
	used := cur.CPU.UsageCoreNanoSeconds - prev.CPU.UsageCoreNanoSeconds
	return int64(float64(used) / float64(dt.Nanoseconds()) * 1000)
}
