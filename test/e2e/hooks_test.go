package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// hookScript traps SIGTERM and SIGUSR1, each appending its name to
// /out/log, says it is ready, and waits.
const hookScript = `trap "echo TERM >> /out/log; exit 0" TERM
trap "echo USR1 >> /out/log; exit 0" USR1
echo main >> /out/log
sleep 3600 & wait`

func hookManifest(name, dir, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 10
%s  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: out, mountPath: /out}]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo postStart >> /out/log"]}
      preStop:
        exec: {command: ["sh", "-c", "echo preStop >> /out/log; sleep 1; echo preStop-done >> /out/log"]}
  volumes:
  - name: out
    hostPath: {path: %s, type: Directory}
`, name, extra, hookScript, dir)
}

// TestHookOrder: the postStart hook runs after the container starts; when
// the pod is removed its preStop hook runs to its end before the stop
// signal, which is SIGTERM, or lifecycle.stopSignal's SIGUSR1 when set.
func TestHookOrder(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	dirs := map[string]string{"term": d.hostDir("term"), "usr1": d.hostDir("usr1")}
	d.writeManifest("term.yaml", hookManifest("term", dirs["term"], ""))
	m := hookManifest("usr1", dirs["usr1"], "  os: {name: linux}\n")
	m = strings.Replace(m, "    lifecycle:\n", "    lifecycle:\n      stopSignal: SIGUSR1\n", 1)
	d.writeManifest("usr1.yaml", m)
	for name, dir := range dirs {
		d.waitPod(name+"-"+node, 60*time.Second, "Running", running)
		// The traps are set and the postStart hook has run: now stop it.
		d.poll(name+"'s trap and postStart hook", 20*time.Second, func() (bool, string) {
			l := fileLines(dir + "/log")
			return slices.Contains(l, "main") && slices.Contains(l, "postStart"), fmt.Sprint(l)
		})
		d.removeManifest(name + ".yaml")
	}
	for name, dir := range dirs {
		d.waitGone(name+"-"+node, 30*time.Second)
		// postStart runs beside the entrypoint: "main" may come anywhere
		// before the stop.
		got := slices.DeleteFunc(fileLines(dir+"/log"), func(s string) bool { return s == "main" })
		want := []string{"postStart", "preStop", "preStop-done", map[string]string{"term": "TERM", "usr1": "USR1"}[name]}
		if !slices.Equal(got, want) {
			t.Errorf("pod %s: hooks and signal in the order %q, want %q", name, got, want)
		}
	}
}

// TestHookPostStartFailure: a failing postStart hook is told
// (FailedPostStartHook, with the hook's output) and kills the container,
// which the restart policy restarts.
func TestHookPostStartFailure(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("broken.yaml", `apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo hook-broke; exit 3"]}
`)
	name := "broken-" + node
	p := d.waitPod(name, 60*time.Second, "restarted after its postStart hook failed", func(p *v1.Pod) bool {
		return containerStatus(p, "main").RestartCount >= 1
	})
	if last := containerStatus(p, "main").LastTerminationState.Terminated; last == nil || last.ExitCode != 137 {
		t.Errorf("last state %+v, want killed (137)", last)
	}
	if n, msgs := d.eventCount(name, "FailedPostStartHook", "hook-broke"); n == 0 {
		t.Errorf("no FailedPostStartHook event with the hook's output: %q", msgs)
	}
	if n, msgs := d.eventCount(name, "Killing", "FailedPostStartHook"); n == 0 {
		t.Errorf("no Killing event for the failed hook: %q", msgs)
	}
}
