package e2e

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/syncbuf"
)

// follow runs a podvisor client command that keeps running (a watch)
// until the test ends, and returns its stdout and stderr as they grow.
func (d *daemon) follow(args ...string) (stdout, stderr *syncbuf.Buffer) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	stdout, stderr = &syncbuf.Buffer{}, &syncbuf.Buffer{}
	cmd := exec.CommandContext(ctx, podvisorBin, append(args, "--socket", d.sock)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		cancel()
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { cancel(); cmd.Wait() })
	return stdout, stderr
}

// linesOf returns out's lines that contain every one of words.
func linesOf(out *syncbuf.Buffer, words ...string) []string {
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		if countLines([]string{l}, words...) == 1 {
			got = append(got, l)
		}
	}
	return got
}

// TestWatch: get pods -w prints the list, then a line for each change of
// a crashing pod; get events -w prints each new event and repeat. Both
// carry on across a restart of podvisor, saying so, and print only what
// is new after it.
func TestWatch(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("steady.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: steady
spec:
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
	steady := "steady-" + node
	d.waitPod(steady, 60*time.Second, "running", running)

	pods, podsErr := d.follow("get", "pods", "-w")
	events, _ := d.follow("get", "events", "-w")
	d.poll("the pod list", 10*time.Second, func() (bool, string) {
		return strings.HasPrefix(pods.String(), "NAME ") && len(linesOf(pods, steady, "Running")) == 1, pods.String()
	})
	d.poll("the event list", 10*time.Second, func() (bool, string) {
		return strings.HasPrefix(events.String(), "LAST SEEN ") && len(linesOf(events, "pod/"+steady, "Started")) == 1, events.String()
	})

	d.writeManifest("crash.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: crash
spec:
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "sleep 1; exit 1"]
`)
	crash := "crash-" + node
	// Each change is a line: created, running, restarted at once (the
	// first restart does not wait), CrashLoopBackOff, restarted again.
	d.poll("lines for each change of the crashing pod", 60*time.Second, func() (bool, string) {
		ok := len(linesOf(pods, crash, "ContainerCreating")) >= 1 &&
			len(linesOf(pods, crash, "Running", " 0 ")) >= 1 &&
			len(linesOf(pods, crash, "Running", " 1 (")) >= 1 &&
			len(linesOf(pods, crash, "CrashLoopBackOff", " 1 (")) >= 1 &&
			len(linesOf(pods, crash, "Running", " 2 (")) >= 1
		return ok, pods.String()
	})
	if n := strings.Count(pods.String(), "NAME "); n != 1 {
		t.Errorf("header printed %d times:\n%s", n, pods.String())
	}
	// Every Started of the crashing pod is a line (new, then its repeats).
	d.poll("a line per Started event", 30*time.Second, func() (bool, string) {
		return len(linesOf(events, "pod/"+crash, "Started", "Started container main")) >= 2, events.String()
	})

	// podvisor restarts: the watches wait, say so, and go on.
	d.stop(syscall.SIGTERM)
	d.start()
	d.poll("the watch to say podvisor restarted", 30*time.Second, func() (bool, string) {
		return strings.Contains(podsErr.String(), "podvisor restarted; listing again"), podsErr.String()
	})
	before := len(linesOf(events, "pod/"+steady))
	d.removeManifest("steady.yaml")
	d.poll("the stop of the steady pod, after the restart", 60*time.Second, func() (bool, string) {
		return len(linesOf(pods, steady, "Terminating")) >= 1, pods.String()
	})
	d.poll("the Killing event, after the restart", 60*time.Second, func() (bool, string) {
		return len(linesOf(events, "pod/"+steady, "Killing", "Stopping container main")) == 1, events.String()
	})
	// The relist printed no old event again: only the Killing one is new.
	if got := len(linesOf(events, "pod/"+steady)); got != before+1 {
		t.Errorf("steady's event lines %d after the restart, want %d (old events printed again?):\n%s", got, before+1, events.String())
	}
}
