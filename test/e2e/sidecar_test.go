package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// sidecarScript runs probetarget (HTTP on 8080, its state file
// /out/state) under a shell that, on
// SIGTERM, appends side-TERM to /out/log and stops it.
const sidecarScript = `trap "echo side-TERM >> /out/log; kill \$pid; exit 0" TERM
/bin/probetarget -state /out/state -http 8080 -https -1 -tcp -1 -grpc -1 & pid=$!
echo side-up >> /out/log
wait`

// sidecarAppScript writes whether the sidecar answers when the app starts
// and, on SIGTERM (answered slowly, so a sidecar stopped beside it would
// be first), whether it still answers.
const sidecarAppScript = `side() { if timeout 2 wget -q -O /dev/null http://127.0.0.1:8080/; then echo "$1-side-up"; else echo "$1-side-down"; fi >> /out/log; }
trap "sleep 1; side app-TERM; exit 0" TERM
side app-start
sleep 3600 & wait`

// TestSidecarOrder: a native sidecar (an init container with restartPolicy
// Always) is started, and passes its startup probe, before the app
// container starts; it counts toward the pod's readiness; and when the pod
// is removed it is stopped only after the app container has ended.
func TestSidecarOrder(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	dir := d.hostDir("side")
	d.start()
	d.writeManifest("side.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: side}
spec:
  terminationGracePeriodSeconds: 20
  initContainers:
  - name: proxy
    image: busybox
    imagePullPolicy: IfNotPresent
    restartPolicy: Always
    command: ["sh", "-c", %q]
    volumeMounts: [{name: out, mountPath: /out}]
    startupProbe:
      httpGet: {path: /started, port: 8080}
      periodSeconds: 1
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: out, mountPath: /out}]
  volumes:
  - name: out
    hostPath: {path: %s, type: Directory}
`, sidecarScript, sidecarAppScript, dir))
	name := "side-" + node
	p := d.waitPod(name, 60*time.Second, "Ready", func(p *v1.Pod) bool { return running(p) && podReady(p) })
	if len(p.Status.InitContainerStatuses) != 1 {
		t.Fatalf("init container statuses %+v", p.Status.InitContainerStatuses)
	}
	if cs := p.Status.InitContainerStatuses[0]; cs.State.Running == nil || !started(cs) || !cs.Ready {
		t.Errorf("sidecar status: state %+v started %v ready %v, want running, started and ready", cs.State, started(cs), cs.Ready)
	}
	d.poll("the app's first line", 20*time.Second, func() (bool, string) {
		l := fileLines(dir + "/log")
		return len(l) >= 2, fmt.Sprint(l)
	})
	// The sidecar's readiness is the pod's: it answering 500 makes the pod
	// not Ready.
	d.writeAtomic(dir+"/state", "http:/ready=500\n")
	d.waitPod(name, 30*time.Second, "not Ready with its sidecar", func(p *v1.Pod) bool {
		return !containerReady(p, "proxy") && podNotReady(p) && containerReady(p, "app")
	})
	d.writeAtomic(dir+"/state", "")
	d.waitPod(name, 30*time.Second, "Ready again", podReady)

	d.removeManifest("side.yaml")
	d.waitGone(name, 60*time.Second)
	want := []string{"side-up", "app-start-side-up", "app-TERM-side-up", "side-TERM"}
	if got := fileLines(dir + "/log"); !slices.Equal(got, want) {
		t.Errorf("sidecar and app in the order %q, want %q", got, want)
	}
}
