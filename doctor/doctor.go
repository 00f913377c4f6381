package doctor

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/pressure"
)

// Status is how a check went.
type Status string

// The statuses, worst last.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Finding is one result of a check; its JSON is `podvisor doctor -o
// json`'s stable schema.
type Finding struct {
	// Check names the check ("containerd", "cni", "disk", ...).
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Message says what was found, naming the path, value or error.
	Message string `json:"message"`
	// Fix is how to fix a warn or fail, in one line; "" when ok.
	Fix string `json:"fix"`
}

func ok(check, format string, a ...any) Finding {
	return Finding{Check: check, Status: OK, Message: fmt.Sprintf(format, a...)}
}

func warn(check, fix, format string, a ...any) Finding {
	return Finding{Check: check, Status: Warn, Message: fmt.Sprintf(format, a...), Fix: fix}
}

func fail(check, fix, format string, a ...any) Finding {
	return Finding{Check: check, Status: Fail, Message: fmt.Sprintf(format, a...), Fix: fix}
}

// Options are the daemon's settings the checks judge, and the roots they
// read.
type Options struct {
	ContainerdAddress   string
	ContainerdNamespace string
	// EmbeddedContainerd: ContainerdAddress is podvisor's own containerd,
	// which runs only while podvisor does.
	EmbeddedContainerd bool
	CNIConfDir         string
	CNIBinDirs         []string
	PodCIDR            string
	Manifests          string
	NodeName           string
	Parse              manifest.ParseOptions
	StateDir, LogDir   string
	ImagesDir          string
	// Thresholds are the eviction thresholds the disks are held to.
	Thresholds []pressure.Threshold
	Kubeconfig string
	// Socket is podvisor's API socket.
	Socket string

	// ProcRoot is /proc (sysctls under ProcRoot/sys); CgroupRoot is
	// /sys/fs/cgroup; Path is where runc is looked for ($PATH when
	// empty).
	ProcRoot, CgroupRoot, Path string
	// Timeout bounds each call that can hang (5s when 0).
	Timeout time.Duration
	// Now is the clock certificates are judged by (time.Now when nil).
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.Path == "" {
		o.Path = os.Getenv("PATH")
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Run runs every check, in the order of the README's table.
func Run(ctx context.Context, o Options) []Finding {
	o.defaults()
	ctrd := dialContainerd(ctx, o)
	defer ctrd.close()
	var out []Finding
	out = append(out, ctrd.finding(o))
	out = append(out, checkRuntime(ctx, o)...)
	out = append(out, checkCgroups(o)...)
	net, fs := checkCNI(o)
	out = append(out, fs...)
	out = append(out, checkSysctls(o, net)...)
	snap, fs := checkManifests(o)
	out = append(out, fs...)
	out = append(out, checkDisks(o)...)
	out = append(out, checkClock(o)...)
	out = append(out, checkImages(ctx, o, snap, ctrd)...)
	out = append(out, checkAPIServer(ctx, o)...)
	out = append(out, checkPodvisor(ctx, o))
	return out
}

// Failed reports whether a finding failed.
func Failed(fs []Finding) bool {
	for _, f := range fs {
		if f.Status == Fail {
			return true
		}
	}
	return false
}

// WriteTable prints findings as a table, each warn or fail followed by its
// fix.
func WriteTable(w io.Writer, fs []Finding) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tMESSAGE")
	for _, f := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Check, strings.ToUpper(string(f.Status)), oneLine(f.Message))
		if f.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", oneLine(f.Fix))
		}
	}
	return tw.Flush()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
