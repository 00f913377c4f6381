package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
)

// The fault-injection tests (issue 7): `make faults` runs them against
// containerd 1.6 and 2.x. Each logs what it checked ("checked: ...").

// pendingCreating: the pod is known, Pending, its container waiting in
// ContainerCreating.
func pendingCreating(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodPending && waitingReason(p, "main") == "ContainerCreating"
}

// TestFaultHangingCNI (defect 2): a CNI plugin that never returns from
// ADD. The pod is visible as Pending/ContainerCreating at once; with
// --runtime-request-timeout 3s the ADD is abandoned, its plugin killed and
// a FailedCreatePodSandBox event says it timed out; with the default
// timeout, removing the manifest interrupts the start.
func TestFaultHangingCNI(t *testing.T) {
	requireEnv(t)
	const name = "hung-" + node
	setup := func(t *testing.T, extra ...string) (*daemon, *hangingCNI) {
		dir := t.TempDir() // outlives the daemon: its clean-up runs DEL
		h := newHangingCNI(t, dir)
		t.Cleanup(h.release) // after the daemon's clean-up: no plugin left
		d := newDaemon(t, append(h.args(), extra...)...)
		t.Cleanup(h.release) // before it: lets the pod go without waiting
		d.start()
		return d, h
	}

	t.Run("Timeout", func(t *testing.T) {
		requireRunFlag(t, "--runtime-request-timeout")
		d, h := setup(t, "--runtime-request-timeout", "3s")
		t0 := time.Now()
		d.writeManifest("hung.yaml", sleeperManifest("hung", 1, "sleep 3600"))
		// Long before the ADD times out.
		d.waitPod(name, 2*time.Second, "Pending/ContainerCreating", pendingCreating)
		t.Logf("checked: pod listed as Pending/ContainerCreating %s after its manifest", time.Since(t0).Round(time.Millisecond))
		d.poll("the plugin's ADD to start", 10*time.Second, func() (bool, string) {
			return len(h.pids()) > 0, "no ADD yet"
		})
		first := h.pids()[0]

		var ev v1.Event
		d.poll("a FailedCreatePodSandBox event that says the ADD timed out", 20*time.Second, func() (bool, string) {
			evs := d.podEvents(name)
			for _, e := range evs {
				m := strings.ToLower(e.Message)
				if e.Type == v1.EventTypeWarning && e.Reason == "FailedCreatePodSandBox" &&
					(strings.Contains(m, "deadline exceeded") || strings.Contains(m, "timeout") || strings.Contains(m, "timed out")) {
					ev = e
					return true, ""
				}
			}
			return false, fmt.Sprintf("events: %s", eventSummary(evs))
		})
		t.Logf("checked: Warning FailedCreatePodSandBox %q %s after the manifest", ev.Message, time.Since(t0).Round(time.Millisecond))
		d.poll(fmt.Sprintf("the timed-out plugin (pid %d) to be killed", first), 5*time.Second, func() (bool, string) {
			return !h.alive(first), "still running"
		})
		t.Logf("checked: timed-out plugin pid %d is gone", first)
		p := d.waitPod(name, 5*time.Second, "still Pending/ContainerCreating after the timeout", pendingCreating)
		t.Logf("checked: pod still listed after the timeout (phase %s, %s)", p.Status.Phase, waitingReason(p, "main"))
	})

	t.Run("RemoveDuringAdd", func(t *testing.T) {
		// The default timeout (2 min) is far beyond the test: only the
		// removal can end the ADD.
		d, h := setup(t)
		t0 := time.Now()
		d.writeManifest("hung.yaml", sleeperManifest("hung", 1, "sleep 3600"))
		d.waitPod(name, 5*time.Second, "Pending/ContainerCreating", pendingCreating)
		t.Logf("checked: pod listed as Pending/ContainerCreating %s after its manifest", time.Since(t0).Round(time.Millisecond))
		d.poll("the plugin's ADD to start", 10*time.Second, func() (bool, string) {
			return len(h.pids()) > 0, "no ADD yet"
		})
		pid := h.pids()[0]
		if !h.alive(pid) {
			t.Fatalf("plugin pid %d is not hanging", pid)
		}

		t1 := time.Now()
		d.removeManifest("hung.yaml")
		d.waitGone(name, 10*time.Second)
		t.Logf("checked: pod gone %s after its manifest was removed during ADD", time.Since(t1).Round(time.Millisecond))
		d.poll(fmt.Sprintf("the interrupted plugin (pid %d) to be gone", pid), 10*time.Second-time.Since(t1), func() (bool, string) {
			return !h.alive(pid), "still running"
		})
		d.poll("the sandbox's mounts to be gone", 5*time.Second, func() (bool, string) {
			ms := mountsUnder(d.run)
			return len(ms) == 0, fmt.Sprint(ms)
		})
		t.Logf("checked: plugin pid %d killed and no mount left under the run dir, %s after the removal", pid, time.Since(t1).Round(time.Millisecond))
	})
}

func eventSummary(evs []v1.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, fmt.Sprintf("%s %s %q", e.Type, e.Reason, e.Message))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}

// TestFaultStopDuringRemoval (defect 3): podvisor stopped (SIGTERM as
// systemctl sends, or kill -9) while it removes 20 pods, then started
// again, finishes the removal and leaves nothing: no shim, container,
// task, active snapshot, lease, IP, mount, pod cgroup or record.
func TestFaultStopDuringRemoval(t *testing.T) {
	requireEnv(t)
	for _, tc := range []struct {
		name string
		stop func(d *daemon)
	}{
		{"SIGTERM", func(d *daemon) { d.stop(syscall.SIGTERM) }},
		{"SIGKILL", func(d *daemon) { d.killGroup() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := allocatedIPs(t)
			d := newDaemon(t)
			d.start()
			t0 := time.Now()
			d.writeFleet()
			d.waitRunningPods(fleetSize, 120*time.Second)
			t.Logf("%d pods Running in %s", fleetSize, time.Since(t0).Round(time.Millisecond))

			// Stop at the first task deleted: the pods with the shortest
			// grace are being deleted, the others are in their grace period.
			d.removeFleet()
			d.watch("the first task to be deleted", 30*time.Second, func(cl *containerd.Client) (bool, string) {
				all, _, err := tasks(cl)
				return err == nil && all < fleetSize, fmt.Sprintf("%d tasks", all)
			})
			tc.stop(d)
			inv := d.take(base)
			t.Logf("stopped podvisor (%s) during the removal; left at once: %s", tc.name, inv.counts())

			d.start()
			t1 := time.Now()
			d.waitNoPods(60 * time.Second)
			t.Logf("checked: restarted podvisor listed no pod after %s", time.Since(t1).Round(time.Millisecond))
			d.requireEmpty(fmt.Sprintf("after %s during the removal of %d pods", tc.name, fleetSize), base, 30*time.Second)
		})
	}
}

// TestFaultKillDuringStarts (defects 3 and 4): kill -9 of podvisor twice
// while 20 pods start, once as their root filesystems are prepared and
// once as their tasks start. Restarted, it runs exactly one container per
// pod (no duplicate tasks, shims, snapshots, IPs or cgroups); once the
// pods are removed nothing is left, leases included.
func TestFaultKillDuringStarts(t *testing.T) {
	requireEnv(t)
	base := allocatedIPs(t)
	d := newDaemon(t)
	d.start()
	// Pods start only once busybox is imported; an unpack interrupted
	// here is TestFaultKillDuringImport's.
	d.waitLogLine("imported image archive", "busybox.tar")
	d.writeFleet()
	at := d.watch("a container's root filesystem to be prepared", 60*time.Second, func(cl *containerd.Client) (bool, string) {
		n, err := rootfsSnapshots(cl)
		return err == nil && n > 0, fmt.Sprintf("%d root filesystem snapshots", n)
	})
	d.killGroup()
	t.Logf("killed podvisor (kill -9) at %s; left at once: %s", at, d.take(base).counts())

	d.start()
	at = d.watch("5 running tasks", 60*time.Second, func(cl *containerd.Client) (bool, string) {
		all, running, err := tasks(cl)
		return err == nil && running >= 5, fmt.Sprintf("%d tasks, %d running", all, running)
	})
	d.killGroup()
	t.Logf("killed podvisor (kill -9) again at %s; left at once: %s", at, d.take(base).counts())

	d.start()
	d.waitRunningPods(fleetSize, 120*time.Second)
	uids := map[string]bool{}
	for _, p := range d.listPods() {
		uids[string(p.UID)] = true
	}
	var (
		last inventory
		bad  []string
	)
	deadline := time.Now().Add(15 * time.Second)
	for {
		last = d.take(base)
		if bad = onePerPod(last, uids); len(bad) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(bad) > 0 {
		t.Errorf("after the restart, want one of each per pod (%d): %s (%s)", fleetSize, strings.Join(bad, ", "), last.counts())
	} else {
		t.Logf("checked: after the restart one running container per pod: %s", last.counts())
	}

	d.removeFleet()
	d.waitNoPods(60 * time.Second)
	d.requireEmpty(fmt.Sprintf("after kill -9 during the start of %d pods and their removal", fleetSize), base, 30*time.Second)
}

// TestFaultKillDuringImport (defect 4): kill -9 of podvisor while it
// imports a large image archive. Restarted, it imports the archive again
// and no extract-* snapshot, lease or active snapshot is left.
func TestFaultKillDuringImport(t *testing.T) {
	d := newDaemon(t)
	const ref = "podvisor.test/big:1"
	t.Cleanup(func() { deleteImage(d, ref) })
	big := filepath.Join(d.dir, "big.bin")
	writeRandom(t, big, 64<<20)
	partial := filepath.Join(d.dir, "big.partial")
	if err := testimage.Build(partial, testimage.Options{Ref: ref, ExtraFiles: map[string]string{"/big.bin": big}}); err != nil {
		t.Fatal(err)
	}
	os.Remove(big)

	d.start()
	d.waitLogLine("imported image archive", "busybox.tar")
	d.poll("no lease once busybox is imported", 10*time.Second, func() (bool, string) {
		v := d.take(nil)
		return len(v.Leases) == 0, fmt.Sprint(v.Leases)
	})

	if err := os.Rename(partial, filepath.Join(d.images, "big.tar")); err != nil {
		t.Fatal(err)
	}
	// Kill at the first extract-* snapshot (the unpack), or 3 s after the
	// import's lease appeared if no unpack is seen.
	var leaseAt time.Time
	at := d.watch("the import of big.tar to begin", 30*time.Second, func(cl *containerd.Client) (bool, string) {
		leases, extracts, err := importState(cl)
		switch {
		case err != nil:
			return false, err.Error()
		case len(extracts) > 0:
			return true, fmt.Sprintf("extract snapshot %v", extracts)
		case len(leases) > 0 && leaseAt.IsZero():
			leaseAt = time.Now()
		case !leaseAt.IsZero() && time.Since(leaseAt) > 3*time.Second:
			return true, fmt.Sprintf("lease %v (no extract snapshot seen in 3s)", leases)
		}
		return false, "no lease or extract snapshot"
	})
	d.killGroup()
	imported := []string{`msg="imported image archive"`, "file=" + filepath.Join(d.images, "big.tar")}
	if d.logHasLine(0, imported...) {
		t.Fatalf("big.tar was imported before the kill: the import was not interrupted")
	}
	after := d.take(nil)
	t.Logf("killed podvisor (kill -9) during the import at %s; left by the kill: %d leases, %d extract snapshots", at, len(after.Leases), len(after.Extracts))

	off := d.logSize()
	d.start()
	d.poll("big.tar imported again", 60*time.Second, func() (bool, string) {
		return d.logHasLine(off, imported...), "not imported yet"
	})
	t.Logf("checked: restarted podvisor imported big.tar")
	var last inventory
	deadline := time.Now().Add(30 * time.Second)
	for {
		last = d.take(nil)
		if len(last.Extracts)+len(last.Leases)+len(last.Snapshots) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the re-import: extract snapshots %v, leases %v, active snapshots %v", last.Extracts, last.Leases, last.Snapshots)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("checked: no extract snapshot, lease or active snapshot left after the interrupted import (%s)", last.counts())
}

func writeRandom(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// deleteImage removes ref from the daemon's namespace and waits for
// containerd to collect its content, so the 64 MB do not outlive the test.
func deleteImage(d *daemon, ref string) {
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		return
	}
	defer cl.Close()
	cl.ImageService().Delete(context.Background(), ref, images.SynchronousDelete())
}

// TestFaultContainerdAway (defect 8): containerd stopped and held down for
// 25 s while podvisor runs. A pod added meanwhile is Pending with a
// condition saying the runtime is unreachable, never in image pull
// back-off; a removal and a container killed meanwhile do not make
// podvisor repeat itself in its log more than about once per 10 s. Within
// 15 s of containerd's return the new pod runs, the killed container has
// restarted once and the removed pod is gone, with no back-off charged.
func TestFaultContainerdAway(t *testing.T) {
	const outage = 25 * time.Second
	d := newDaemon(t)
	d.start()
	d.writeManifest("steady.yaml", sleeperManifest("steady", 1, "sleep 3600"))
	d.writeManifest("leaving.yaml", sleeperManifest("leaving", 1, "sleep 3600"))
	p := d.waitPod("steady-"+node, 60*time.Second, "Running", running)
	d.waitPod("leaving-"+node, 60*time.Second, "Running", running)
	steadyID := containerID(p, "main")
	pid := d.taskPID(steadyID)

	start := stopContainerd(t)
	off := d.logSize()
	t0 := time.Now()
	d.writeManifest("fresh.yaml", sleeperManifest("fresh", 1, "sleep 3600"))
	d.removeManifest("leaving.yaml")
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatalf("kill the steady container (pid %d): %v", pid, err)
	}

	// Watch the new pod for the whole outage.
	var (
		listed, pending bool
		cond            v1.PodCondition
		condAt          time.Duration
		pullReasons     = map[string]bool{}
		last            *v1.Pod
		lastErr         error
	)
	for time.Since(t0) < outage {
		p, err := d.pod("fresh-" + node)
		lastErr = err
		if err == nil {
			last = p
			listed = true
			pending = pending || p.Status.Phase == v1.PodPending
			if r := waitingReason(p, "main"); r == "ErrImagePull" || r == "ImagePullBackOff" {
				pullReasons[r] = true
			}
			if c, ok := runtimeUnreachable(p); ok && condAt == 0 {
				cond, condAt = c, time.Since(t0)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	switch {
	case !listed:
		t.Errorf("pod added while containerd was down was never listed: %v", lastErr)
	case !pending:
		t.Errorf("pod added while containerd was down was never Pending; last phase %s", last.Status.Phase)
	default:
		t.Logf("checked: pod added while containerd was down listed as Pending")
	}
	if len(pullReasons) > 0 {
		t.Errorf("pod added while containerd was down showed %v", pullReasons)
	} else if listed {
		t.Logf("checked: it never showed ErrImagePull or ImagePullBackOff")
	}
	if condAt == 0 {
		t.Errorf("no condition of the pod added during the outage said the runtime is unreachable; last conditions: %s", conditionSummary(last))
	} else {
		t.Logf("checked: condition %s=%s reason %q message %q, %s into the outage", cond.Type, cond.Status, cond.Reason, cond.Message, condAt.Round(time.Millisecond))
	}
	// The running pod, whose container was killed meanwhile, says so too.
	if sp, err := d.pod("steady-" + node); err != nil {
		t.Errorf("running pod during the outage: %v", err)
	} else if c, ok := runtimeUnreachable(sp); !ok {
		t.Errorf("running pod's conditions during the outage do not say the runtime is unreachable: phase %s, %s", sp.Status.Phase, conditionSummary(sp))
	} else {
		t.Logf("checked: the running pod says so too: %s=%s reason %q", c.Type, c.Status, c.Reason)
	}

	max := int(outage/(10*time.Second)) + 2
	if rep := repeatedLogs(d.logSince(off), max); len(rep) > 0 {
		t.Errorf("during a %s outage podvisor logged these more than %d times: %v", outage, max, rep)
	} else {
		t.Logf("checked: no WARN/ERROR message repeated more than %d times in the %s outage", max, outage)
	}

	start()
	t1 := time.Now()
	backoff := map[string]bool{}
	d.poll("everything to converge after containerd returned", 15*time.Second, func() (bool, string) {
		pods := d.listPods()
		var fresh, steady *v1.Pod
		leaving := false
		for i := range pods {
			p := &pods[i]
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && (w.Reason == "CrashLoopBackOff" || w.Reason == "ImagePullBackOff" || w.Reason == "ErrImagePull") {
					backoff[p.Name+": "+w.Reason] = true
				}
			}
			switch p.Name {
			case "fresh-" + node:
				fresh = p
			case "steady-" + node:
				steady = p
			case "leaving-" + node:
				leaving = true
			}
		}
		var wait []string
		if fresh == nil || !running(fresh) || containerStatus(fresh, "main").RestartCount != 0 {
			wait = append(wait, "fresh not Running with restartCount 0")
		}
		if steady == nil || !running(steady) || containerStatus(steady, "main").RestartCount != 1 || containerID(steady, "main") == steadyID {
			wait = append(wait, "steady not Running again with restartCount 1")
		}
		if leaving {
			wait = append(wait, "leaving still listed")
		}
		return len(wait) == 0, strings.Join(wait, "; ")
	})
	t.Logf("checked: %s after containerd returned: new pod Running (restartCount 0), killed container restarted once, removed pod gone", time.Since(t1).Round(time.Millisecond))
	if len(backoff) > 0 {
		t.Errorf("back-off shown after containerd returned: %v", backoff)
	} else {
		t.Logf("checked: no CrashLoopBackOff or image pull back-off after the outage")
	}
	if p, err := d.pod("steady-" + node); err == nil {
		if rc := containerStatus(p, "main").RestartCount; rc != 1 {
			t.Errorf("killed container's restartCount = %d after converging, want 1", rc)
		}
	} else if !errors.Is(err, api.ErrNotFound) {
		t.Error(err)
	}
}
