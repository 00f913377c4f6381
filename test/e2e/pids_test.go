package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/internal/layout"
)

// pidsLimit is TestPodPidsLimit's --pod-pids-limit: small, so the bomb
// reaches it within a second or two.
const pidsLimit = 64

// A fork bomb that outlives its failures: an interactive shell (which
// returns to its prompt after "can't fork" where a script would exit, and
// with it the container and its processes) reads "sleep 1000 &" lines
// from a loop of builtins, a few every 0.1 s (read -t on a FIFO waits
// without a process).
const pidsBomb = `
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkfifo /tmp/tick; exec 3<>/tmp/tick; while :; do echo 'sleep 1000 &'; echo 'sleep 1000 &'; echo 'sleep 1000 &'; echo 'sleep 1000 &'; read -t 0.1 x <&3; done | sh -i"]
`

// TestPodPidsLimit: --pod-pids-limit is the pod cgroup's pids.max; a fork
// bomb in one pod is held at exactly the limit (pids.current, from the
// pod's cgroup) while its own shell reports the forks the kernel refused;
// meanwhile another pod still forks and answers an exec, and podvisor's
// API answers; removing the bomb pod leaves no process and no cgroup.
func TestPodPidsLimit(t *testing.T) {
	t.Parallel()
	d := newDaemon(t, "--pod-pids-limit", strconv.Itoa(pidsLimit))
	d.start()
	d.writeManifest("bomb.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bomb}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:"+pidsBomb)
	d.writeManifest("calm.yaml", `apiVersion: v1
kind: Pod
metadata: {name: calm}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
	bomb := d.waitPod("bomb", 60*time.Second, "running", running)
	d.waitPod("calm", 60*time.Second, "running", running)

	// The bomb pod's cgroup: pids.max is the limit, and pids.current
	// reaches it and stays there.
	rel := layout.PodCgroup(d.ns, string(bomb.UID))
	dir := filepath.Join("/sys/fs/cgroup", rel)
	if !cgroupfs.IsV2("/sys/fs/cgroup") {
		dir = filepath.Join("/sys/fs/cgroup/pids", rel)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err.Error()
		}
		return strings.TrimSpace(string(b))
	}
	if got := read("pids.max"); got != strconv.Itoa(pidsLimit) {
		t.Fatalf("%s/pids.max = %s, want %d", dir, got, pidsLimit)
	}
	d.poll("the bomb to reach the pids limit", 30*time.Second, func() (bool, string) {
		cur := read("pids.current")
		return cur == strconv.Itoa(pidsLimit), "pids.current = " + cur
	})
	d.poll("the bomb's shell to report refused forks", 20*time.Second, func() (bool, string) {
		p, err := d.pod("bomb")
		if err != nil {
			return false, err.Error()
		}
		lines := d.logLines(p, "main", containerStatus(p, "main").RestartCount)
		return countLines(lines, "can't fork") > 0, strings.Join(lines[max(0, len(lines)-5):], "\n")
	})
	if got := read("pids.current"); got != strconv.Itoa(pidsLimit) {
		t.Errorf("pids.current = %s after the refused forks, want %d (never above)", got, pidsLimit)
	}
	if p, _ := d.pod("bomb"); p != nil && containerStatus(p, "main").RestartCount != 0 {
		t.Errorf("the bomb's container restarted: the limit must refuse forks, not end the pod")
	}

	// The node keeps working: another pod forks and answers, the API
	// answers.
	if out := d.sh("calm", "echo calm $(echo forked)"); strings.TrimSpace(out) != "calm forked" {
		t.Errorf("exec in calm: %q", out)
	}
	out, errOut, code := d.runCLI("", "get", "pods")
	if code != 0 || !strings.Contains(out, "bomb") || !strings.Contains(out, "calm") {
		t.Errorf("podvisor get pods: exit %d: %s%s", code, out, errOut)
	}

	// Removal kills the whole bomb: no process left in its cgroup, and the
	// cgroup itself is removed in every hierarchy.
	d.removeManifest("bomb.yaml")
	d.waitGone("bomb", 60*time.Second)
	d.poll("the bomb's cgroups to be gone", 20*time.Second, func() (bool, string) {
		for _, dir := range cgroupfs.Dirs("/sys/fs/cgroup", rel) {
			if dirExists(dir) {
				return false, dir + " still exists (procs: " + read("cgroup.procs") + ")"
			}
		}
		return true, ""
	})
	if left := procsInCgroup(rel); len(left) > 0 {
		t.Errorf("processes left in the bomb's cgroup %s: %v", rel, left)
	}
}

// procsInCgroup lists the host's processes whose cgroup (in any
// hierarchy) is rel or below it, as "pid cmdline".
func procsInCgroup(rel string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) == 3 && (parts[2] == rel || strings.HasPrefix(parts[2], rel+"/")) {
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}
