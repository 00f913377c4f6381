package containerd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/podvisor/podvisor/internal/procfs"
	"github.com/podvisor/podvisor/supervise"
)

// leaseLabel marks the leases podvisor takes while it creates a container,
// pulls, unpacks or imports: whatever such an operation makes is held by the
// lease until the object that keeps it (a container, an image) exists, and
// a podvisor killed in between leaves only the lease, which Collect drops.
const leaseLabel = "io.podvisor.lease"

// shimSocketRoot is where runc shims put their sockets (containerd's
// defaults.DefaultStateDir + "/s", the same for 1.6 and 2.x).
const shimSocketRoot = "/run/containerd/s"

// leaseOwnerLabel names, on each lease podvisor takes, the Runtime that
// took it (its instance): Collect leaves the leases of its own Runtime.
const leaseOwnerLabel = "io.podvisor.lease.owner"

// withLease runs f under a lease podvisor owns, deleted (synchronously, so
// what it alone held is collected) once f returns.
//
// The lease is created under a context ctx's end does not cancel: a
// create that podvisor's stop cancels on the client can still have made
// the lease in containerd, and nobody would delete it. Once made, it is
// released however f ends; if ctx ended meanwhile, f does not run.
func (r *Runtime) withLease(ctx context.Context, what string, f func(context.Context) error) error {
	ls := r.client.LeasesService()
	cctx, cancel := cleanupContext(ctx)
	l, err := ls.Create(cctx, leases.WithRandomID(), leases.WithLabels(r.leaseLabels(what)))
	cancel()
	if err != nil {
		return fmt.Errorf("lease for %s: %w", what, err)
	}
	ferr := ctx.Err()
	if ferr == nil {
		ferr = f(leases.WithLease(ctx, l.ID))
	}
	cctx, cancel = cleanupContext(ctx)
	defer cancel()
	if err := ls.Delete(cctx, l); err != nil && ferr == nil {
		return fmt.Errorf("release lease for %s: %w", what, err)
	}
	return ferr
}

// leaseLabels are the labels of a lease this Runtime takes for what.
func (r *Runtime) leaseLabels(what string) map[string]string {
	return map[string]string{leaseLabel: what, leaseOwnerLabel: r.instance}
}

// Collect removes what an interrupted podvisor (or one killed with -9)
// left in its namespace with no owner: its leases (and with them the
// snapshots and content only they held: half-made containers' layers,
// interrupted imports' extract-* snapshots), containers without
// podvisor's labels, and runc shims that serve no task. It must run
// before any pod is worked on: every podvisor lease then is a leftover,
// but those this Runtime takes (an image import runs beside the
// start-up), known by their owner label from the moment they exist. A
// lease without podvisor's label is another client's (`ctr -n` importing
// an image, a test reading one) and is left to it and to its expiry.
func (r *Runtime) Collect(ctx context.Context) (_ []string, err error) {
	defer markUnavailable(&err)
	var done []string
	var errs []error
	ls := r.client.LeasesService()
	all, err := ls.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	all = slices.DeleteFunc(all, func(l leases.Lease) bool {
		_, ours := l.Labels[leaseLabel]
		return !ours || l.Labels[leaseOwnerLabel] == r.instance
	})
	for i, l := range all {
		opts := []leases.DeleteOpt{}
		if i == len(all)-1 {
			opts = append(opts, leases.SynchronousDelete) // collect once, after the last
		}
		if err := ls.Delete(ctx, l, opts...); err != nil {
			errs = append(errs, fmt.Errorf("delete lease %s: %w", l.ID, err))
			continue
		}
		done = append(done, "lease "+l.ID)
	}
	ctrs, err := r.client.Containers(ctx)
	if err != nil {
		return done, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil || info.Labels[supervise.LabelPodUID] != "" {
			continue
		}
		if err := r.Stop(ctx, c.ID(), 0); err != nil {
			errs = append(errs, err)
		}
		if err := r.Remove(ctx, c.ID()); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, "container "+c.ID())
	}
	killed, err := r.killIdleShims(ctx, nil)
	return append(done, killed...), errors.Join(append(errs, err)...)
}

// ReleaseShims kills the runc shims of the given groups (sandbox IDs) that
// serve no task any more: a pod's shim exits when its last task is deleted,
// but one whose task creation was cut short (podvisor killed) keeps waiting
// for it. Called once a pod's containers are all gone.
func (r *Runtime) ReleaseShims(ctx context.Context, groups []string) (err error) {
	defer markUnavailable(&err)
	groups = slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == "" })
	if len(groups) == 0 {
		return nil
	}
	_, err = r.killIdleShims(ctx, groups)
	return err
}

// CollectShims kills the runc shims of this namespace that no container
// owns any more and that serve no process: those ReleaseShims could not
// end when their pod went (a process of theirs was still exiting), or
// whose group was given up while podvisor was killed in the middle of a
// task's creation (containerd's clean-up of a cut-short create is bounded
// by 5 s and can leave the shim holding a container it never reported).
// The supervisor calls it once adoption is done (adoption removes the
// containers no record names, which kept such a shim's group owned at
// Collect) and after each pod's removal, never on a timer: finding shims
// walks /proc. It says what it killed.
func (r *Runtime) CollectShims(ctx context.Context) (_ []string, err error) {
	defer markUnavailable(&err)
	return r.killIdleShims(ctx, nil)
}

// killIdleShims kills the shims of this namespace that serve no process
// and whose group no container belongs to: a shim serves the tasks of its
// group (a sandbox, or a container without one), and listens on that
// group's socket. With only set, just the shims of those groups are
// candidates. It says what it killed.
func (r *Runtime) killIdleShims(ctx context.Context, only []string) ([]string, error) {
	ns, _ := namespaces.Namespace(ctx)
	if ns == "" {
		ns = r.opts.Namespace
	}
	// With only set, a shim of another group is left out as soon as its
	// socket is known: its children are not read and, when no shim is
	// left, the containers are not listed. Removing a pod asks this with
	// the other pods' shims all running.
	servesOneOf := func(sh shim, groups []string) bool {
		for _, g := range groups {
			if shimSocket(sh.address, ns, g) == sh.socket {
				return true
			}
		}
		return false
	}
	var keep func(shim) bool
	if only != nil {
		keep = func(sh shim) bool { return servesOneOf(sh, only) }
	}
	shims := findShims(ns, r.opts.LogDriver, keep)
	if len(shims) == 0 {
		return nil, nil
	}
	ctrs, err := r.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	// A group is kept while one of its containers exists, task or not:
	// the shim of a container whose task is being created, or will be
	// again, belongs to that container's pod. Shims are found before the
	// containers are listed, and a container exists before its shim
	// starts, so a shim started meanwhile always has its container here.
	var owned []string
	for _, c := range ctrs {
		owned = append(owned, c.ID())
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if errdefs.IsNotFound(err) {
			continue // deleted since the list
		}
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.ID(), err)
		}
		if sb := info.Labels[supervise.LabelSandboxID]; sb != "" {
			owned = append(owned, sb)
		}
	}
	var done []string
	var errs []error
	for _, sh := range shims {
		if sh.socket == "" || sh.children || servesOneOf(sh, owned) || (only != nil && !servesOneOf(sh, only)) {
			continue
		}
		if err := syscall.Kill(sh.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill idle shim %d: %w", sh.pid, err))
			continue
		}
		os.Remove(sh.socket)
		done = append(done, fmt.Sprintf("shim %d", sh.pid))
	}
	return done, errors.Join(errs...)
}

// shimSocket is the socket a runc shim of group id listens on
// (containerd's shim.SocketAddress).
func shimSocket(address, ns, id string) string {
	d := sha256.Sum256([]byte(filepath.Join(address, ns, id)))
	return fmt.Sprintf("%s/%x", shimSocketRoot, d)
}

// shim is a running runc shim process.
type shim struct {
	pid      int
	address  string // containerd's address it was started for
	socket   string // the path it listens on; "" when unknown
	children bool   // it has child processes (containers' processes)
}

// findShims lists the long-running runc shims of namespace ns; logDriver
// is the log driver's path (see hasChildren). With keep set, a shim it
// refuses once its socket is known is left out before its children are
// read.
func findShims(ns, logDriver string, keep func(shim) bool) []shim {
	var out []shim
	tables := unixTables{}
	for _, p := range procfs.Matching(isShimBinary) {
		sh, ok := parseShim(p.Args, ns)
		if !ok {
			continue
		}
		sh.pid = p.PID
		sh.socket = tables.listeningSocket(p.PID)
		if keep != nil && !keep(sh) {
			continue
		}
		sh.children = hasChildren(p.PID, logDriver)
		out = append(out, sh)
	}
	return out
}

// isShimBinary reports whether arg0 runs a runc shim, as parseShim
// requires.
func isShimBinary(arg0 string) bool {
	return strings.HasPrefix(filepath.Base(arg0), "containerd-shim-runc-v2")
}

// parseShim reads a runc shim's command line: the long-running shim has
// -namespace, -id and -address flags and no subcommand.
func parseShim(args []string, ns string) (shim, bool) {
	if len(args) == 0 || !isShimBinary(args[0]) {
		return shim{}, false
	}
	var sh shim
	var gotNS string
	for i := 1; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		switch {
		case a == "namespace" && i+1 < len(args):
			gotNS = args[i+1]
			i++
		case a == "address" && i+1 < len(args):
			sh.address = args[i+1]
			i++
		case a == "id" || a == "publish-binary" || a == "bundle":
			i++
		case a == "start" || a == "delete":
			return shim{}, false // a short-lived shim command
		}
	}
	return sh, gotNS == ns && sh.address != ""
}

// listeningSocket finds the unix socket path a process listens on, from
// its file descriptors and its network namespace's /proc/net/unix.
func listeningSocket(pid int) string {
	return unixTables(nil).listeningSocket(pid)
}

// unixTables keeps, for one search, the /proc/net/unix table of each
// network namespace by its ns/net link: the shims all share the host's,
// and reading it again for every shim costs the kernel a walk of every
// unix socket of the namespace. A table read once serves the shims found
// after it: a shim's listening socket exists before its process (the
// shim's start command makes it and hands it down).
type unixTables map[string][]byte

// listeningSocket is the package's listeningSocket with the table of
// pid's network namespace read once per t (every time when t is nil).
func (t unixTables) listeningSocket(pid int) string {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if ino, ok := strings.CutPrefix(l, "socket:["); ok && err == nil {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	if len(inodes) == 0 {
		return ""
	}
	netns, err := os.Readlink(filepath.Join(dir, "ns", "net"))
	b, ok := t[netns]
	if t == nil || err != nil || !ok {
		b, err = os.ReadFile(filepath.Join(dir, "net", "unix"))
		if err != nil {
			return ""
		}
		if t != nil && netns != "" {
			t[netns] = b
		}
	}
	return socketPath(b, inodes)
}

// socketPath picks, from a /proc/net/unix table, the listening socket
// (state 01, flags __SO_ACCEPTCON) among inodes that has a path under the
// shim socket root.
func socketPath(table []byte, inodes map[string]bool) string {
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path. Most lines name
		// no shim socket: they are passed over before being split.
		if !bytes.Contains(sc.Bytes(), []byte(" "+shimSocketRoot+"/")) {
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 8 || !inodes[f[6]] {
			continue
		}
		if p := f[7]; strings.HasPrefix(p, shimSocketRoot+"/") && f[3] == "00010000" {
			return p
		}
	}
	return ""
}

// hasChildren reports whether pid has child processes other than log
// drivers. A shim starts the log driver of a task's output (binary://)
// as its child, which exits once the shim closes the output pipes: a
// shim whose task creation was cut short keeps its log driver waiting,
// and that child alone must not keep the shim alive. Killing the shim
// closes the pipes and ends the driver.
func hasChildren(pid int, logDriver string) bool {
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, child := range strings.Fields(string(b)) {
			cmd, err := os.ReadFile(filepath.Join("/proc", child, "cmdline"))
			if errors.Is(err, os.ErrNotExist) {
				continue // exited meanwhile
			}
			if !isLogDriver(strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00"), logDriver) {
				return true
			}
		}
	}
	return false
}

// isLogDriver reports whether args is the command line of podvisor's log
// driver as a shim runs it: logDriver (or a podvisor-log-driver or
// podvisor of another podvisor run) with the log-driver argument and its
// one parameter.
func isLogDriver(args []string, logDriver string) bool {
	if len(args) != 3 || args[1] != "log-driver" {
		return false
	}
	b := filepath.Base(args[0])
	return (logDriver != "" && args[0] == logDriver) || b == "podvisor-log-driver" || b == "podvisor"
}
