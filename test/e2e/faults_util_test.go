package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/internal/procfs"
	"github.com/podvisor/podvisor/supervise"
	v1 "k8s.io/api/core/v1"
)

// The fault tests' helpers: a fleet of small pods, an inventory of what a
// namespace holds in containerd and on the host, a CNI plugin that hangs,
// and containerd held down.

// fleetSize is how many pods the stop-mid-operation scenarios run.
const fleetSize = 20

// fleetManifest is a small busybox pod whose process ignores SIGTERM (it
// is PID 1 without a handler), so each removal lasts its grace period:
// graces of 2–5 s spread the removals of a fleet over a few seconds.
func fleetManifest(i int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: fleet-%02d
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    resources:
      limits: {memory: 16Mi}
`, i, 2+i%4)
}

func fleetFile(i int) string { return fmt.Sprintf("fleet-%02d.yaml", i) }

func (d *daemon) writeFleet() {
	d.t.Helper()
	for i := range fleetSize {
		d.writeManifest(fleetFile(i), fleetManifest(i))
	}
}

func (d *daemon) removeFleet() {
	d.t.Helper()
	for i := range fleetSize {
		d.removeManifest(fleetFile(i))
	}
}

// listPods returns every pod the API reports (nil while podvisor is down).
func (d *daemon) listPods() []v1.Pod {
	l, err := api.NewClient(d.sock).Pods(context.Background())
	if err != nil {
		return nil
	}
	return l.Items
}

func countRunning(pods []v1.Pod) int {
	n := 0
	for i := range pods {
		if running(&pods[i]) {
			n++
		}
	}
	return n
}

// waitFleetRunning waits until n pods are Running.
func (d *daemon) waitRunningPods(n int, timeout time.Duration) {
	d.t.Helper()
	d.poll(fmt.Sprintf("%d pods Running", n), timeout, func() (bool, string) {
		pods := d.listPods()
		r := countRunning(pods)
		return r == n && len(pods) == n, fmt.Sprintf("%d of %d listed pods Running", r, len(pods))
	})
}

// waitNoPods waits until the API lists no pod.
func (d *daemon) waitNoPods(timeout time.Duration) {
	d.t.Helper()
	d.poll("get pods to be empty", timeout, func() (bool, string) {
		l, err := api.NewClient(d.sock).Pods(context.Background())
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		return len(names) == 0, fmt.Sprintf("%d pods left: %v", len(names), names)
	})
}

// tasks counts the daemon namespace's tasks, all and running.
func tasks(cl *containerd.Client) (all, running int, err error) {
	resp, err := cl.TaskService().List(context.Background(), &tasksapi.ListTasksRequest{})
	if err != nil {
		return 0, 0, err
	}
	for _, tk := range resp.Tasks {
		if tk.Status == tasktypes.Status_RUNNING {
			running++
		}
	}
	return len(resp.Tasks), running, nil
}

// rootfsSnapshots counts the active snapshots that are not an unpack's
// (extract-*): containers' root filesystems, prepared or being prepared.
func rootfsSnapshots(cl *containerd.Client) (int, error) {
	n := 0
	err := cl.SnapshotService("overlayfs").Walk(context.Background(), func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive && !strings.HasPrefix(info.Name, "extract-") {
			n++
		}
		return nil
	})
	return n, err
}

// importState lists the namespace's leases and extract-* snapshots.
func importState(cl *containerd.Client) (leases, extracts []string, err error) {
	ls, err := cl.LeasesService().List(context.Background())
	if err != nil {
		return nil, nil, err
	}
	for _, l := range ls {
		leases = append(leases, l.ID)
	}
	err = cl.SnapshotService("overlayfs").Walk(context.Background(), func(_ context.Context, info snapshots.Info) error {
		if strings.HasPrefix(info.Name, "extract-") {
			extracts = append(extracts, info.Name)
		}
		return nil
	})
	return leases, extracts, err
}

// watch polls cond every few milliseconds with one containerd client of
// the daemon's namespace, to catch podvisor in the middle of its work.
func (d *daemon) watch(what string, timeout time.Duration, cond func(cl *containerd.Client) (bool, string)) string {
	d.t.Helper()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		d.t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond(cl)
		if ok {
			return msg
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// inventory is what a containerd namespace and podvisor's directories hold
// for pods: each field lists the items found.
type inventory struct {
	Shims      []string // pids of containerd-shim-runc-v2 with -namespace <ns>
	Containers []string
	Tasks      []string // "<id>:<status>"
	Running    []string // pod UIDs of running tasks, one per task
	Snapshots  []string // overlayfs snapshots that are not committed layers
	Extracts   []string // extract-* snapshots (an interrupted unpack)
	Leases     []string
	IPs        []string // host-local allocations beyond the test's baseline
	Mounts     []string // under the run dir
	Cgroups    []string // pod cgroups under <hierarchy>/<ns>/
	Records    []string // pod records under <state>/pods
}

// counts renders the inventory as "shims=0 containers=0 ...".
func (v inventory) counts() string {
	return fmt.Sprintf("shims=%d containers=%d tasks=%d active-snapshots=%d extract-snapshots=%d leases=%d ips=%d mounts=%d pod-cgroups=%d records=%d",
		len(v.Shims), len(v.Containers), len(v.Tasks), len(v.Snapshots), len(v.Extracts), len(v.Leases), len(v.IPs), len(v.Mounts), len(v.Cgroups), len(v.Records))
}

// nonEmpty names the fields that hold something, with their items.
func (v inventory) nonEmpty() []string {
	var out []string
	for _, f := range []struct {
		name  string
		items []string
	}{
		{"shims", v.Shims}, {"containers", v.Containers}, {"tasks", v.Tasks},
		{"active snapshots", v.Snapshots}, {"extract snapshots", v.Extracts},
		{"leases", v.Leases}, {"IPs", v.IPs}, {"mounts", v.Mounts},
		{"pod cgroups", v.Cgroups}, {"pod records", v.Records},
	} {
		if len(f.items) > 0 {
			out = append(out, fmt.Sprintf("%d %s %v", len(f.items), f.name, f.items))
		}
	}
	return out
}

// take counts what the daemon's namespace holds now. baseIPs are the
// allocations that existed before the test (other tests' networks share
// the harness's IPAM directory).
func (d *daemon) take(baseIPs []string) inventory {
	d.t.Helper()
	v, err := d.inventory(baseIPs)
	if err != nil {
		d.t.Fatal(err)
	}
	return v
}

// inventory is take returning its error, for the harness's clean-up,
// which must go on after it.
func (d *daemon) inventory(baseIPs []string) (inventory, error) {
	var v inventory
	v.Shims = shimPIDs(d.ns)

	ctx := context.Background()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		return v, err
	}
	defer cl.Close()
	ctrs, err := cl.Containers(ctx)
	if err != nil {
		return v, fmt.Errorf("list containers: %w", err)
	}
	uids := map[string]string{}
	for _, c := range ctrs {
		v.Containers = append(v.Containers, c.ID())
		if l, err := c.Labels(ctx); err == nil {
			uids[c.ID()] = l[supervise.LabelPodUID]
		}
	}
	resp, err := cl.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		return v, fmt.Errorf("list tasks: %w", err)
	}
	for _, tk := range resp.Tasks {
		v.Tasks = append(v.Tasks, tk.ID+":"+strings.ToLower(strings.TrimPrefix(tk.Status.String(), "Status_")))
		if tk.Status == tasktypes.Status_RUNNING {
			v.Running = append(v.Running, uids[tk.ID])
		}
	}
	err = cl.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind != snapshots.KindCommitted {
			v.Snapshots = append(v.Snapshots, info.Name)
		}
		if strings.HasPrefix(info.Name, "extract-") {
			v.Extracts = append(v.Extracts, info.Name)
		}
		return nil
	})
	if err != nil {
		return v, fmt.Errorf("walk snapshots: %w", err)
	}
	ls, err := cl.LeasesService().List(ctx)
	if err != nil {
		return v, fmt.Errorf("list leases: %w", err)
	}
	for _, l := range ls {
		v.Leases = append(v.Leases, l.ID)
	}

	ips, err := hostLocalIPs()
	if err != nil {
		return v, err
	}
	for _, ip := range ips {
		if !slices.Contains(baseIPs, ip) {
			v.IPs = append(v.IPs, ip+" of "+ipOwner(ip))
		}
	}
	// The built-in network's IPAM lives in the state dir; the harness's
	// network does not use it, but nothing may be left there either.
	nets, _ := os.ReadDir(filepath.Join(d.state, "cni", "networks"))
	for _, n := range nets {
		entries, _ := os.ReadDir(filepath.Join(d.state, "cni", "networks", n.Name()))
		for _, e := range entries {
			if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip") {
				v.IPs = append(v.IPs, n.Name()+"/"+e.Name())
			}
		}
	}
	v.Mounts = mountsUnder(d.run)
	v.Cgroups = podCgroups(d.ns)
	records, _ := os.ReadDir(filepath.Join(d.state, "pods"))
	for _, r := range records {
		v.Records = append(v.Records, r.Name())
	}
	return v, nil
}

// onePerPod lists how inv differs from one running container (task,
// shim, root filesystem, IP, cgroup, record) for each pod of uids.
func onePerPod(inv inventory, uids map[string]bool) []string {
	var bad []string
	perPod := map[string]int{}
	for _, uid := range inv.Running {
		perPod[uid]++
	}
	for uid := range uids {
		if perPod[uid] != 1 {
			bad = append(bad, fmt.Sprintf("pod %s has %d running tasks", uid, perPod[uid]))
		}
	}
	for _, c := range []struct {
		what string
		n    int
	}{
		{"containers", len(inv.Containers)}, {"tasks", len(inv.Tasks)}, {"running tasks", len(inv.Running)},
		{"shims", len(inv.Shims)}, {"active snapshots", len(inv.Snapshots)}, {"IPs", len(inv.IPs)},
		{"pod cgroups", len(inv.Cgroups)}, {"records", len(inv.Records)},
	} {
		if c.n != len(uids) {
			bad = append(bad, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(inv.Extracts) > 0 {
		bad = append(bad, fmt.Sprintf("%d extract snapshots", len(inv.Extracts)))
	}
	return bad
}

// logOf returns the lines of the daemon's log that name the sandbox of
// any of ips (as inventory lists them, "IP of ID"), the last 30: what
// podvisor did with an address it left behind.
func (d *daemon) logOf(ips []string) string {
	b, _ := os.ReadFile(d.logFile)
	var lines []string
	for _, ip := range ips {
		_, id, ok := strings.Cut(ip, " of ")
		if !ok || len(id) < 8 {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, id) {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "\npodvisor's log of those sandboxes:\n  " + strings.Join(lines, "\n  ")
}

// requireEmpty polls until the daemon's namespace holds nothing (cleanup
// and containerd's GC are asynchronous), then reports what it counted.
func (d *daemon) requireEmpty(what string, baseIPs []string, timeout time.Duration) {
	d.t.Helper()
	var last inventory
	deadline := time.Now().Add(timeout)
	for {
		last = d.take(baseIPs)
		left := last.nonEmpty()
		if len(left) == 0 {
			d.t.Logf("checked: %s: nothing left (%s)", what, last.counts())
			return
		}
		if time.Now().After(deadline) {
			d.t.Errorf("%s: left after %s:\n  %s%s", what, timeout, strings.Join(left, "\n  "), d.logOf(last.IPs))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// shimPIDs lists the shims serving namespace ns of the test's containerd
// (the harness's shimCount, with the pids for the report): by -namespace
// and -address, so that the shims of other containerd instances on the
// machine (other test runs) are never counted.
func shimPIDs(ns string) []string {
	var pids []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if strings.HasSuffix(args[0], "containerd-shim-runc-v2") && bytes.Contains(b, []byte("\x00-namespace\x00"+ns+"\x00")) &&
			bytes.Contains(b, []byte("\x00-address\x00"+env.Address+"\x00")) {
			pids = append(pids, p.Name()+shimDetail(p.Name(), args))
		}
	}
	return pids
}

// shimDetail describes a shim for a report: the id it was started for and
// its children (a runc container left inside it shows as "runc init").
func shimDetail(pid string, args []string) string {
	var id string
	for i, a := range args {
		if a == "-id" && i+1 < len(args) {
			id = args[i+1]
		}
	}
	// Any of its threads may have forked a child.
	var kids []string
	threads, _ := os.ReadDir(filepath.Join("/proc", pid, "task"))
	for _, th := range threads {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "task", th.Name(), "children"))
		if err != nil {
			continue
		}
		for _, k := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile(filepath.Join("/proc", k, "cmdline"))
			kids = append(kids, k+":"+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return fmt.Sprintf("(id %s, children %q)", id, kids)
}

// podCgroups lists the cgroups below podvisor's parent for ns in every
// hierarchy, each once ("pod<uid>").
func podCgroups(ns string) []string {
	seen := map[string]bool{}
	for _, dir := range cgroupfs.Dirs("/sys/fs/cgroup", ns) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				seen[e.Name()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// pidAlive reports whether pid is a live (not zombie) process whose
// command line holds word, so a reused pid is not mistaken for it.
func pidAlive(pid int, word string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return bytes.Contains(cmd, []byte(word))
}

// hangingCNI is a CNI network whose only plugin hangs on ADD (recording
// its pid first) and succeeds at every other command. Once released it
// fails ADD at once instead, so a test's clean-up can remove its pods.
type hangingCNI struct {
	confDir, binDir string
	pidFile         string
	releaseFile     string
	sleep           string
}

const hangSleep = "1000"

// newHangingCNI writes the plugin and its conflist into dir, which must
// outlive the daemon (the daemon's clean-up runs DEL).
func newHangingCNI(t *testing.T, dir string) *hangingCNI {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingCNI{
		confDir:     filepath.Join(dir, "net.d"),
		binDir:      filepath.Join(dir, "bin"),
		pidFile:     filepath.Join(dir, "hang.pids"),
		releaseFile: filepath.Join(dir, "released"),
		sleep:       sleep,
	}
	for _, p := range []string{h.confDir, h.binDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
case "$CNI_COMMAND" in
ADD)
	if [ -e %[1]s ]; then
		echo '{"cniVersion":"1.0.0","code":11,"msg":"released by the test"}'
		exit 1
	fi
	echo $$ >> %[2]s
	exec %[3]s %[4]s
	;;
VERSION)
	echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}'
	;;
esac
exit 0
`, h.releaseFile, h.pidFile, sleep, hangSleep)
	if err := os.WriteFile(filepath.Join(h.binDir, "pvhang"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := `{"cniVersion":"1.0.0","name":"pvhang","plugins":[{"type":"pvhang"}]}`
	if err := os.WriteFile(filepath.Join(h.confDir, "10-pvhang.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// args points podvisor at the hanging network; the reference plugins
// (loopback) stay reachable.
func (h *hangingCNI) args() []string {
	return []string{"--cni-conf-dir", h.confDir, "--cni-bin-dir", h.binDir + ":" + env.CNIBinDir}
}

// pids lists the pids of every ADD so far, oldest first.
func (h *hangingCNI) pids() []int {
	b, _ := os.ReadFile(h.pidFile)
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func (h *hangingCNI) alive(pid int) bool { return pidAlive(pid, hangSleep) }

// release makes every later ADD fail at once and kills the hanging ones.
func (h *hangingCNI) release() {
	os.WriteFile(h.releaseFile, nil, 0o644)
	for _, pid := range h.pids() {
		if h.alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// requireRunFlag fails the test at once when `podvisor run` has no flag
// called name (podvisor would exit with a usage error, which start only
// notices after its 30 s deadline).
func requireRunFlag(t *testing.T, name string) {
	t.Helper()
	out, _ := exec.Command(podvisorBin, "run", "--help").CombinedOutput()
	if !bytes.Contains(out, []byte(name+" ")) {
		t.Fatalf("podvisor run has no %s flag", name)
	}
}

// containerdPID finds the harness's containerd by its config file.
func containerdPID() int {
	conf := filepath.Join(env.Dir, "config.toml")
	for _, p := range procfs.List() {
		if p.Args[0] == env.Containerd && slices.Contains(p.Args[1:], conf) && pidAlive(p.PID, "containerd") {
			return p.PID
		}
	}
	return 0
}

// stopContainerd stops the harness's containerd as systemctl stop would
// (SIGTERM; shims keep running) and returns once it is gone. The test's
// clean-up starts it again if the test has not (env.Restart starts a
// daemon that is no longer running).
func stopContainerd(t *testing.T) (start func()) {
	t.Helper()
	pid := containerdPID()
	if pid == 0 {
		t.Fatal("harness containerd not found")
	}
	started := false
	start = func() {
		if started {
			return
		}
		started = true
		if err := env.Restart(); err != nil {
			t.Fatalf("start containerd again: %v", err)
		}
	}
	t.Cleanup(start)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for pidAlive(pid, "containerd") {
		if time.Now().After(deadline) {
			t.Fatalf("containerd pid %d still running 20s after SIGTERM", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return start
}

// logSize is the current length of podvisor's log, to read what it logs
// from now on with logSince.
func (d *daemon) logSize() int64 {
	st, err := os.Stat(d.logFile)
	if err != nil {
		return 0
	}
	return st.Size()
}

func (d *daemon) logSince(off int64) string {
	b, _ := os.ReadFile(d.logFile)
	if off > int64(len(b)) {
		return ""
	}
	return string(b[off:])
}

// logHasLine reports whether podvisor logged, after offset off, one line
// that holds every word.
func (d *daemon) logHasLine(off int64, words ...string) bool {
	for _, line := range strings.Split(d.logSince(off), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// logRecord is the part of one slog text line that says what happened.
type logRecord struct {
	level, msg, pod string
}

// parseLogLine reads level, msg and pod from a slog TextHandler line.
func parseLogLine(line string) (logRecord, bool) {
	var r logRecord
	for _, k := range []struct {
		key string
		dst *string
	}{{"level=", &r.level}, {"msg=", &r.msg}, {"pod=", &r.pod}} {
		i := strings.Index(line, " "+k.key)
		if i < 0 {
			continue
		}
		rest := line[i+1+len(k.key):]
		if strings.HasPrefix(rest, `"`) {
			if s, err := strconv.QuotedPrefix(rest); err == nil {
				*k.dst, _ = strconv.Unquote(s)
			}
		} else {
			*k.dst, _, _ = strings.Cut(rest, " ")
		}
	}
	return r, r.level != "" && r.msg != ""
}

// repeatedLogs returns the WARN and ERROR messages (per pod) that text
// holds more than max times each.
func repeatedLogs(text string, max int) map[string]int {
	counts := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		r, ok := parseLogLine(line)
		if !ok || (r.level != "WARN" && r.level != "ERROR") {
			continue
		}
		counts[r.level+" "+strconv.Quote(r.msg)+" pod="+r.pod]++
	}
	for k, n := range counts {
		if n <= max {
			delete(counts, k)
		}
	}
	return counts
}

// podEvents returns the events recorded for the pod called name.
func (d *daemon) podEvents(name string) []v1.Event {
	l, err := api.NewClient(d.sock).Events(context.Background())
	if err != nil {
		return nil
	}
	var out []v1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// waitingReason is the reason the pod's container name is waiting for, or "".
func waitingReason(p *v1.Pod, name string) string {
	if w := containerStatus(p, name).State.Waiting; w != nil {
		return w.Reason
	}
	return ""
}

// conditionSummary renders a pod's conditions on one line.
func conditionSummary(p *v1.Pod) string {
	if p == nil {
		return "no pod"
	}
	var out []string
	for _, c := range p.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s %s %q", c.Type, c.Status, c.Reason, c.Message))
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// runtimeUnreachable finds the condition that says the pod's runtime
// cannot be reached: False, with a reason naming the runtime or a message
// saying it is unreachable.
func runtimeUnreachable(p *v1.Pod) (v1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Status == v1.ConditionFalse && (strings.Contains(c.Reason, "Runtime") || strings.Contains(strings.ToLower(c.Message), "unreachable")) {
			return c, true
		}
	}
	return v1.PodCondition{}, false
}
