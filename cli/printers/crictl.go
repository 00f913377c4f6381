package printers

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
)

// truncatedIDLen is how much of an ID crictl shows.
const truncatedIDLen = 13

// PS prints the containers of pods as crictl ps does: CONTAINER IMAGE
// CREATED STATE NAME ATTEMPT POD ID POD, newest first. A container is each
// container status (init, regular, ephemeral) with a container ID: the ID
// without its "containerd://" prefix, cut to 13 as crictl cuts it; its
// image; when it started; Running, Exited or Created; its restart count as
// the attempt; the pod's UID (cut to 13) as the pod ID. Only running
// containers unless o.All (crictl ps -a); o.NoHeaders leaves the header
// out. now is the current time, for CREATED. Any Output but "" is an error.
func PS(w io.Writer, pods []v1.Pod, o Options, now time.Time) error {
	if o.Output != "" {
		return fmt.Errorf("unknown output format %q: ps prints a table only", o.Output)
	}
	type container struct {
		created time.Time
		row     []string
	}
	var cs []container
	for i := range pods {
		p := &pods[i]
		statuses := slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses)
		for _, st := range statuses {
			if st.ContainerID == "" {
				continue
			}
			state, created := "Created", time.Time{}
			switch {
			case st.State.Running != nil:
				state, created = "Running", st.State.Running.StartedAt.Time
			case st.State.Terminated != nil:
				state, created = "Exited", st.State.Terminated.StartedAt.Time
				if created.Unix() <= 0 { // a start the runtime refused (StartError): it never started
					created = st.State.Terminated.FinishedAt.Time
				}
			}
			if state != "Running" && !o.All {
				continue
			}
			age := "Unknown"
			if !created.IsZero() {
				age = humanDuration(now.Sub(created)) + " ago"
			}
			cs = append(cs, container{created, []string{
				truncateID(st.ContainerID), imageString(st.Image), age, state, st.Name,
				strconv.Itoa(int(st.RestartCount)), truncateID(string(p.UID)), p.Name,
			}})
		}
	}
	slices.SortStableFunc(cs, func(a, b container) int { return b.created.Compare(a.created) })
	var rows [][]string
	if !o.NoHeaders {
		rows = append(rows, []string{"CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD"})
	}
	for _, c := range cs {
		rows = append(rows, c.row)
	}
	return printCrictl(w, rows)
}

// Image is one image as `podvisor images` lists it: one of its names
// (docker.io/library/busybox:1.36, or NAME@sha256:... for an image known
// by digest only), its digest (sha256:..., shown as crictl's IMAGE ID) and
// its size in bytes. An image with several names is one Image per name.
type Image struct {
	Name   string
	Digest string
	Size   int64
}

// Images prints images as crictl images does: IMAGE TAG IMAGE ID SIZE, by
// name, the tag <none> for an image named by digest only, the ID without
// its algorithm and cut to 13, the size in decimal units ("4.27MB").
// o.NoHeaders leaves the header out; any Output but "" is an error.
func Images(w io.Writer, images []Image, o Options) error {
	if o.Output != "" {
		return fmt.Errorf("unknown output format %q: images prints a table only", o.Output)
	}
	sorted := slices.Clone(images)
	slices.SortStableFunc(sorted, func(a, b Image) int { return cmp.Compare(a.Name, b.Name) })
	var rows [][]string
	if !o.NoHeaders {
		rows = append(rows, []string{"IMAGE", "TAG", "IMAGE ID", "SIZE"})
	}
	for _, im := range sorted {
		repo, tag := splitTag(im.Name)
		rows = append(rows, []string{repo, tag, truncateID(im.Digest), humanSize(im.Size)})
	}
	return printCrictl(w, rows)
}

// splitTag splits an image name into crictl's IMAGE and TAG columns.
func splitTag(name string) (repo, tag string) {
	if repo, _, ok := strings.Cut(name, "@"); ok {
		return repo, "<none>"
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		return name[:i], name[i+1:]
	}
	return name, "<none>"
}

// truncateID is crictl's getTruncatedID: an ID without its
// "containerd://" or "sha256:" prefix, cut to 13.
func truncateID(id string) string {
	if _, rest, ok := strings.Cut(id, "://"); ok {
		id = rest
	}
	if _, rest, ok := strings.Cut(id, ":"); ok {
		id = rest
	}
	if len(id) > truncatedIDLen {
		id = id[:truncatedIDLen]
	}
	return id
}

// imageString is crictl's IMAGE column: a name as it is, an image ID (a
// bare digest) cut.
func imageString(image string) string {
	if strings.HasPrefix(image, "sha256:") {
		return truncateID(image)
	}
	return image
}

// printCrictl prints rows as crictl's table display does (columns at
// least 20 wide, 3 spaces apart), cells escaped.
func printCrictl(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 20, 1, 3, ' ', 0)
	for _, r := range rows {
		cells := slices.Clone(r)
		escapeAll(cells)
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// humanDuration is docker's units.HumanDuration, which crictl prints.
func humanDuration(d time.Duration) string {
	seconds := int(d.Seconds())
	minutes := int(d.Minutes())
	hours := int(d.Hours() + 0.5)
	switch {
	case seconds < 1:
		return "Less than a second"
	case seconds == 1:
		return "1 second"
	case seconds < 60:
		return fmt.Sprintf("%d seconds", seconds)
	case minutes == 1:
		return "About a minute"
	case minutes < 60:
		return fmt.Sprintf("%d minutes", minutes)
	case hours == 1:
		return "About an hour"
	case hours < 48:
		return fmt.Sprintf("%d hours", hours)
	case hours < 24*7*2:
		return fmt.Sprintf("%d days", hours/24)
	case hours < 24*30*2:
		return fmt.Sprintf("%d weeks", hours/24/7)
	case hours < 24*365*2:
		return fmt.Sprintf("%d months", hours/24/30)
	}
	return fmt.Sprintf("%d years", int(d.Hours())/24/365)
}

// humanSize is docker's units.HumanSizeWithPrecision(size, 3), which
// crictl prints: decimal units, three significant digits.
func humanSize(size int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"}
	f, i := float64(size), 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	return fmt.Sprintf("%.*g%s", 3, f, units[i])
}
