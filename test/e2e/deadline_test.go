package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestActiveDeadline proves activeDeadlineSeconds as kubelet's
// activeDeadlineHandler enforces it: counted from status.startTime, which
// a restarted podvisor keeps (the deadline passes while podvisor is down
// and the pod is stopped at once when it comes back, not a full deadline
// later); the container gets SIGTERM within its grace period (its trap
// writes to a hostPath file), the pod ends Failed with kubelet's reason
// and message, a DeadlineExceeded event is recorded, and it stays Failed.
func TestActiveDeadline(t *testing.T) {
	d := newDaemon(t)
	out := d.hostDir("deadline")
	d.start()

	const deadline = 10 * time.Second
	d.writeManifest("deadline.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: %d
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'echo term > /out/signal; exit 0' TERM; echo up > /out/up; while true; do sleep 0.2; done"]
    volumeMounts: [{name: out, mountPath: /out}]
  volumes:
  - name: out
    hostPath: {path: %s, type: Directory}
`, int(deadline/time.Second), out))
	name := "deadline-" + node
	p := d.waitPod(name, 90*time.Second, "running", running)
	if p.Status.StartTime == nil {
		t.Fatal("no status.startTime")
	}
	start := p.Status.StartTime.Time
	d.poll("the container to start", 20*time.Second, func() (bool, string) {
		_, err := os.Stat(filepath.Join(out, "up"))
		return err == nil, fmt.Sprint(err)
	})

	// podvisor is down while the deadline passes; the pod runs on.
	d.stop(syscall.SIGTERM)
	d.poll("the deadline to pass while podvisor is down", deadline+10*time.Second, func() (bool, string) {
		return time.Now().After(start.Add(deadline + time.Second)), "not yet"
	})
	if _, err := os.Stat(filepath.Join(out, "signal")); err == nil {
		t.Fatal("the container was stopped while podvisor was down")
	}
	restarted := time.Now()
	d.start()
	// Well within a deadline of podvisor's start: counted from the
	// recorded start time, not from the restart.
	p = d.waitPod(name, deadline-2*time.Second, "Failed with DeadlineExceeded", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && containerStatus(p, "main").State.Terminated != nil
	})
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason %q message %q, want kubelet's DeadlineExceeded", p.Status.Reason, p.Status.Message)
	}
	if !p.Status.StartTime.Time.Equal(start) {
		t.Errorf("status.startTime %v after a restart, want %v", p.Status.StartTime.Time, start)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			t.Errorf("condition %+v: kubelet sets no DisruptionTarget for a deadline", c)
		}
	}
	t.Logf("stopped %v after podvisor's restart", time.Since(restarted).Round(time.Millisecond))
	b, err := os.ReadFile(filepath.Join(out, "signal"))
	if err != nil || string(b) != "term\n" {
		t.Errorf("the container's TERM trap wrote %q (%v), want it stopped with SIGTERM", b, err)
	}
	if term := containerStatus(p, "main").State.Terminated; term.ExitCode != 0 {
		t.Errorf("exit code %d, want 0 from the trap", term.ExitCode)
	}
	d.poll("DeadlineExceeded event", 20*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
		return n > 0, strings.Join(msgs, "\n")
	})
	d.hold("the pod stays Failed", 3*time.Second, func() (bool, string) {
		p, err := d.pod(name)
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodFailed && containerStatus(p, "main").State.Running == nil, string(p.Status.Phase)
	})
	d.removeManifest("deadline.yaml")
	d.waitGone(name, 60*time.Second)
}
