package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// rolloutPod is a manifest of pod "web" whose container has REV=rev in its
// environment; crash makes it exit 3 at once instead of running.
func rolloutPod(rev int, crash bool) string {
	cmd := `trap 'exit 0' TERM; while true; do sleep 1; done`
	if crash {
		cmd = "exit 3"
	}
	return webPod(rev, 2, cmd, "")
}

// neverReadyPod is revision rev of pod "web" whose container runs but is
// never Ready (its readiness probe fails) and ignores SIGTERM, with a
// 30 s grace period: stopping it takes that long.
func neverReadyPod(rev int) string {
	return webPod(rev, 30, "trap '' TERM; while true; do sleep 1; done",
		"    readinessProbe:\n      exec: {command: [\"false\"]}\n      periodSeconds: 1\n")
}

// webPod is revision rev of pod "web": one container running cmd with
// REV=rev in its environment, grace seconds to stop, and extra (YAML of
// the container's other fields) appended.
func webPod(rev, grace int, cmd, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    kubernetes.io/change-cause: "rev %d"
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    env:
    - name: REV
      value: "%d"
    command: ["sh", "-c", %q]
%s`, rev, grace, rev, cmd, extra)
}

// runningRev waits until web runs Ready with REV=rev, proved from inside
// its container, and returns the pod.
func (d *daemon) runningRev(rev int, timeout time.Duration) *v1.Pod {
	d.t.Helper()
	var p *v1.Pod
	d.poll(fmt.Sprintf("web to run REV=%d", rev), timeout, func() (bool, string) {
		var err error
		if p, err = d.pod("web-" + node); err != nil {
			return false, err.Error()
		}
		if !running(p) || !podReady(p) {
			return false, "not running and Ready: " + string(p.Status.Phase)
		}
		out, errOut, code := d.runCLI("", "exec", "web-"+node, "--", "sh", "-c", "echo $REV")
		return code == 0 && strings.TrimSpace(out) == fmt.Sprint(rev), fmt.Sprintf("exec: exit %d, %q %q", code, out, errOut)
	})
	return p
}

// TestRollout: with --progress-deadline, a valid edit that becomes Ready
// stays; one whose container crashes is rolled back within the deadline
// (new containers of the previous spec, an event, the pod marked, the
// failed revision kept in rollout history); a kill -9 while an edit is
// on probation, and one in the middle of a rollback (while the failed
// revision's container takes its grace period to stop), converge to the
// same rollback; rollout undo goes back one revision.
func TestRollout(t *testing.T) {
	t.Parallel()
	d := newDaemon(t, "--progress-deadline", "6s", "--min-ready", "2s")
	d.start()
	name := "web-" + node

	d.writeManifest("web.yaml", rolloutPod(1, false))
	d.runningRev(1, 60*time.Second)

	// A good edit: rolled out, and it stays.
	d.writeManifest("web.yaml", rolloutPod(2, false))
	d.poll("RolloutComplete of revision 2", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "RolloutComplete", "revision 2 successfully rolled out")
		return n == 1, fmt.Sprint(msgs)
	})
	good := d.runningRev(2, 10*time.Second)
	if out, errOut, code := d.runCLI("", "rollout", "status", "web"); code != 0 || !strings.Contains(out, "successfully rolled out (revision 2)") {
		t.Fatalf("rollout status: exit %d, %q %q", code, out, errOut)
	}

	// A crashing edit: rolled back within the deadline to new containers
	// of revision 2.
	edited := time.Now()
	d.writeManifest("web.yaml", rolloutPod(3, true))
	d.poll("RolledBack event", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "RolledBack", "revision 3")
		return n == 1, fmt.Sprint(msgs)
	})
	if took := time.Since(edited); took > 15*time.Second {
		t.Errorf("rolled back %s after the edit, deadline 6s", took)
	}
	_, msgs := d.eventCount(name, "RolledBack", "")
	if !strings.Contains(msgs[0], "rolled back to revision 2: not Ready within 6s: container app") {
		t.Errorf("RolledBack event %q does not say why", msgs[0])
	}
	p := d.runningRev(2, 30*time.Second)
	if p.UID != good.UID || containerID(p, "app") == containerID(good, "app") {
		t.Errorf("after the rollback: uid %s (revision 2's %s), container %s (before %s): want revision 2's spec in a new container",
			p.UID, good.UID, containerID(p, "app"), containerID(good, "app"))
	}
	if a := p.Annotations[status.RolloutAnnotation]; !strings.Contains(a, "revision 3") {
		t.Errorf("%s annotation %q", status.RolloutAnnotation, a)
	}
	out, _, _ := d.runCLI("", "describe", "pod", "web")
	if !strings.Contains(out, "Rolled Back:") || !strings.Contains(out, "RolledBack") {
		t.Errorf("describe does not say it was rolled back:\n%s", out)
	}
	out, errOut, code := d.runCLI("", "rollout", "history", "web")
	if code != 0 || !strings.Contains(out, "2 (running)") || !regexp.MustCompile(`(?m)^3 +\S+ +RolledBack +rev 3 +not Ready within 6s`).MatchString(out) {
		t.Errorf("rollout history: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := d.runCLI("", "rollout", "history", "web", "--revision", "3"); code != 0 || !strings.Contains(out, "restarts=") {
		t.Errorf("history of revision 3 keeps no status: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := d.runCLI("", "rollout", "status", "web"); code != 1 || !strings.Contains(errOut, "runs revision 2, not its manifest's revision 3") {
		t.Errorf("rollout status after a rollback: exit %d, %q", code, errOut)
	}

	// kill -9 while a crashing edit is on probation: the restarted
	// podvisor rolls it back all the same.
	d.writeManifest("web.yaml", rolloutPod(4, true))
	d.poll("RolloutProgressing of revision 4", 30*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "RolloutProgressing", "revision 4 must be Ready")
		return n == 1, fmt.Sprint(msgs)
	})
	d.killGroup()
	d.start()
	d.poll("revision 4 rolled back", 40*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "RolledBack", "revision 4")
		return n == 1, fmt.Sprint(msgs)
	})
	d.runningRev(2, 30*time.Second)

	// kill -9 in the middle of a rollback: revision 5 runs but never gets
	// Ready and ignores SIGTERM, so the rollback's stop of it takes its
	// 30 s grace period; podvisor is killed during that stop. The
	// restarted podvisor finishes the same rollback (revision 2 again,
	// revision 5's container gone) and does not decide it a second time.
	d.writeManifest("web.yaml", neverReadyPod(5))
	d.poll("revision 5 rolled back", 40*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "RolledBack", "revision 5")
		return n == 1, fmt.Sprint(msgs)
	})
	// Mid-rollback: revision 5's container still runs (its stop waits out
	// the grace period).
	if out, errOut, code := d.runCLI("", "exec", name, "--", "sh", "-c", "echo $REV"); code != 0 || strings.TrimSpace(out) != "5" {
		t.Fatalf("right after the rollback's decision, revision 5's container is not running: exit %d, %q %q", code, out, errOut)
	}
	d.killGroup()
	d.start()
	p = d.runningRev(2, 60*time.Second)
	if n, msgs := d.eventCount(name, "RolledBack", "revision 5"); n != 1 {
		t.Errorf("revision 5 rolled back %d times across the restart: %q", n, msgs)
	}
	if a := p.Annotations[status.RolloutAnnotation]; !strings.Contains(a, "revision 5") {
		t.Errorf("after the restart mid-rollback, %s annotation %q", status.RolloutAnnotation, a)
	}
	if len(p.Status.ContainerStatuses) != 1 {
		t.Errorf("after the restart mid-rollback: %d container statuses, want 1", len(p.Status.ContainerStatuses))
	}

	// undo: the revision before the running one.
	if out, errOut, code := d.runCLI("", "rollout", "undo", "web"); code != 0 || strings.TrimSpace(out) != "pod/"+name+" rolled back to revision 1" {
		t.Fatalf("rollout undo: exit %d, %q %q", code, out, errOut)
	}
	p = d.runningRev(1, 30*time.Second)
	if a := p.Annotations[status.RolloutAnnotation]; !strings.Contains(a, "rollout undo") {
		t.Errorf("after undo, %s annotation %q", status.RolloutAnnotation, a)
	}
	if _, errOut, code := d.runCLI("", "rollout", "undo", "web", "--to-revision", "99"); code != 1 || !strings.Contains(errOut, "revision 99 is not kept") {
		t.Errorf("undo to a revision not kept: exit %d, %q", code, errOut)
	}
}
