package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// delHangSleep marks the processes of the plugin that hangs on ADD and DEL.
const delHangSleep = "1001"

// hangingDelCNI is a CNI network whose only plugin, pvdelhang, hangs on
// ADD and on DEL (a CNI daemon that is away), recording each pid, until
// released: then every command returns at once.
type hangingDelCNI struct {
	confDir, binDir, pids, released string
}

func newHangingDelCNI(t *testing.T, dir string) *hangingDelCNI {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingDelCNI{confDir: filepath.Join(dir, "net.d"), binDir: filepath.Join(dir, "bin"),
		pids: filepath.Join(dir, "pids"), released: filepath.Join(dir, "released")}
	for _, p := range []string{h.confDir, h.binDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
case "$CNI_COMMAND" in
ADD|DEL)
	if [ -e %[1]s ]; then
		[ "$CNI_COMMAND" = ADD ] && { echo '{"cniVersion":"1.0.0","code":11,"msg":"released"}'; exit 1; }
		exit 0
	fi
	echo "$CNI_COMMAND $$" >> %[2]s
	exec %[3]s %[4]s
	;;
VERSION)
	echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}'
	;;
esac
exit 0
`, h.released, h.pids, sleep, delHangSleep)
	if err := os.WriteFile(filepath.Join(h.binDir, "pvdelhang"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := `{"cniVersion":"1.0.0","name":"pvdelhang","plugins":[{"type":"pvdelhang"}]}`
	if err := os.WriteFile(filepath.Join(h.confDir, "10-pvdelhang.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *hangingDelCNI) args() []string {
	return []string{"--cni-conf-dir", h.confDir, "--cni-bin-dir", h.binDir + ":" + env.CNIBinDir}
}

// calls lists the hanging calls so far ("ADD 123").
func (h *hangingDelCNI) calls() []string {
	b, _ := os.ReadFile(h.pids)
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

func (h *hangingDelCNI) has(cmd string) bool {
	b, _ := os.ReadFile(h.pids)
	return strings.Contains(string(b), cmd+" ")
}

// release makes every later call return at once and kills the hanging ones.
func (h *hangingDelCNI) release() {
	os.WriteFile(h.released, nil, 0o644)
	b, _ := os.ReadFile(h.pids)
	for _, line := range strings.Split(string(b), "\n") {
		var cmd string
		var pid int
		if n, _ := fmt.Sscanf(line, "%s %d", &cmd, &pid); n == 2 && pidAlive(pid, delHangSleep) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestRemovedPodTerminating (issue 17, "a removed pod says it is being
// removed"): with a CNI plugin that hangs on ADD and DEL, a pod whose
// manifest is removed is listed as Terminating at once — not Pending /
// ContainerCreating for the DEL's 2 min bound — and describe names the
// step it waits on (the CNI DEL and its plugin) and for how long. Once the
// plugin answers, the pod is gone.
func TestRemovedPodTerminating(t *testing.T) {
	requireEnv(t)
	t.Parallel()
	const name = "away-" + node
	dir := t.TempDir()
	h := newHangingDelCNI(t, dir)
	t.Cleanup(h.release) // after the daemon's clean-up
	d := newDaemon(t, h.args()...)
	t.Cleanup(h.release) // before it
	d.start()
	d.writeManifest("away.yaml", sleeperManifest("away", 5, "sleep 3600"))
	d.waitPod(name, 10*time.Second, "Pending/ContainerCreating", pendingCreating)
	d.poll("the plugin's ADD to hang", 10*time.Second, func() (bool, string) {
		return h.has("ADD"), fmt.Sprint(h.calls())
	})

	t0 := time.Now()
	d.removeManifest("away.yaml")
	var line string
	d.poll("get pods to list the pod as Terminating", 10*time.Second, func() (bool, string) {
		out, errOut, err := d.cli("get", "pods")
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, name+" ") && strings.Contains(l, "Terminating") {
				line = l
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s%s%v", out, errOut, err)
	})
	t.Logf("checked: %q %s after the removal", strings.Join(strings.Fields(line), " "), time.Since(t0).Round(time.Millisecond))
	p, err := d.pod(name)
	if err != nil {
		t.Fatal(err)
	}
	if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 5 {
		t.Errorf("deletionTimestamp %v, deletionGracePeriodSeconds %v: want set and 5", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
	}

	// The DEL hangs (the one undoing the interrupted ADD, or the stop's):
	// describe says so, and for how long.
	var desc string
	d.poll("describe to name the CNI DEL and its plugin", 20*time.Second, func() (bool, string) {
		out, errOut, _ := d.cli("describe", "pod", name)
		desc = out
		return strings.Contains(out, "Terminating") && strings.Contains(out, "DEL") &&
			strings.Contains(out, "(plugin pvdelhang) for ") && h.has("DEL"), out + errOut + fmt.Sprint(h.calls())
	})
	for _, l := range strings.Split(desc, "\n") {
		if strings.HasPrefix(l, "Status:") || strings.HasPrefix(l, "Stopping:") {
			t.Logf("checked: describe %q", strings.Join(strings.Fields(l), " "))
		}
	}
	if p, err := d.pod(name); err == nil && p.Status.Phase == v1.PodRunning {
		t.Errorf("a pod whose ADD never returned is Running")
	}

	h.release()
	t1 := time.Now()
	d.waitGone(name, 20*time.Second)
	t.Logf("checked: pod gone %s after the plugin answered", time.Since(t1).Round(time.Millisecond))
}
