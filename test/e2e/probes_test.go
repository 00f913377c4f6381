package e2e

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// probeTargetCmd runs probetarget with only the listeners named (each
// "http=8080" style), its state file in the pod's /state volume.
func probeTargetCmd(listeners ...string) string {
	ports := map[string]string{"http": "-1", "https": "-1", "tcp": "-1", "grpc": "-1"}
	for _, l := range listeners {
		k, v, _ := strings.Cut(l, "=")
		ports[k] = v
	}
	return fmt.Sprintf(`["/bin/probetarget", "-state", "/state/state", "-http", "%s", "-https", "%s", "-tcp", "%s", "-grpc", "%s"]`,
		ports["http"], ports["https"], ports["tcp"], ports["grpc"])
}

// stateVolume is the pod's /state hostPath volume, dir on the host.
func stateVolume(dir string) string {
	return `  volumes:
  - name: state
    hostPath: {path: ` + dir + `, type: Directory}
`
}

const stateMount = `    volumeMounts: [{name: state, mountPath: /state}]
`

// TestProbeExecLiveness: a failing exec liveness probe kills the container
// with the probe's own terminationGracePeriodSeconds (1 s, not the pod's
// 20 s: PID 1 ignores SIGTERM, so only SIGKILL ends it), and the restart
// policy restarts it, again and again; the events say so in kubelet's words.
func TestProbeExecLiveness(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("live.yaml", `apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    livenessProbe:
      exec: {command: ["sh", "-c", "echo sick; exit 1"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
`)
	name := "live-" + node
	first := d.waitPod(name, 60*time.Second, "Running", running)
	firstID := containerID(first, "main")
	t0 := time.Now()
	p := d.waitPod(name, 60*time.Second, "restarted by its liveness probe", func(p *v1.Pod) bool {
		return containerStatus(p, "main").RestartCount >= 1
	})
	if el := time.Since(t0); el > 15*time.Second {
		t.Errorf("first restart after %s: the probe's 1s grace period was not used", el)
	}
	cs := containerStatus(p, "main")
	if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 137 || last.ContainerID != first.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("last state = %+v, want the first container (%s) SIGKILLed (137)", last, firstID)
	}
	// The restart policy keeps restarting it (after kubelet's back-off).
	d.waitPod(name, 60*time.Second, "restarted twice", func(p *v1.Pod) bool {
		return containerStatus(p, "main").RestartCount >= 2
	})
	for _, ev := range []struct{ reason, msg string }{
		{"Unhealthy", "Liveness probe failed: sick"},
		{"Killing", "Container main failed liveness probe, will be restarted"},
	} {
		n, msgs := d.eventCount(name, ev.reason, ev.msg)
		if n < 2 {
			t.Errorf("%d %s events with %q, want at least 2; %s events: %q", n, ev.reason, ev.msg, ev.reason, msgs)
		}
	}
	for _, e := range d.podEvents(name) {
		if e.Reason == "Unhealthy" && (e.Type != v1.EventTypeWarning || e.InvolvedObject.FieldPath != "spec.containers{main}") {
			t.Errorf("Unhealthy event %s about %q, want Warning about spec.containers{main}", e.Type, e.InvolvedObject.FieldPath)
		}
	}
}

// TestProbeHTTPReadiness: an httpGet readiness probe against probetarget
// makes the container and the pod Ready; when the target answers 500 they
// become not Ready, with an Unhealthy event and no restart; healthy again,
// Ready again.
func TestProbeHTTPReadiness(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	dir := d.hostDir("ready")
	d.start()
	d.writeManifest("ready.yaml", `apiVersion: v1
kind: Pod
metadata: {name: ready}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox
    imagePullPolicy: IfNotPresent
    command: `+probeTargetCmd("http=8080")+`
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
      failureThreshold: 2
`+stateMount+stateVolume(dir))
	name := "ready-" + node
	p := d.waitPod(name, 60*time.Second, "Ready", func(p *v1.Pod) bool { return running(p) && containerReady(p, "web") && podReady(p) })
	id := containerID(p, "web")

	d.writeAtomic(dir+"/state", "http:/ready=500\n")
	p = d.waitPod(name, 30*time.Second, "not Ready", func(p *v1.Pod) bool { return !containerReady(p, "web") && podNotReady(p) })
	if n, msgs := d.eventCount(name, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 500"); n == 0 {
		t.Errorf("no Unhealthy event for the 500s: %q", msgs)
	}
	if !running(p) {
		t.Errorf("container not running while not ready: %+v", containerStatus(p, "web").State)
	}

	d.writeAtomic(dir+"/state", "")
	p = d.waitPod(name, 30*time.Second, "Ready again", func(p *v1.Pod) bool { return containerReady(p, "web") && podReady(p) })
	if cs := containerStatus(p, "web"); cs.RestartCount != 0 || containerID(p, "web") != id {
		t.Errorf("readiness failures restarted the container: restartCount %d, id %s -> %s", cs.RestartCount, id, containerID(p, "web"))
	}
	if n, msgs := d.eventCount(name, "Killing", ""); n != 0 {
		t.Errorf("Killing events for a readiness failure: %q", msgs)
	}
	// The probe came from podvisor, as kubelet's does.
	if n := countLines(d.logLines(p, "web", 0), "http GET /ready -> 500", `User-Agent="kube-probe/`); n == 0 {
		t.Errorf("no kube-probe request answered 500 in the target's log")
	}
}

// TestProbeTCPGRPCLiveness: tcpSocket and grpc liveness probes every
// second (failureThreshold 1: one failed run would restart) on a healthy
// probetarget never restart it over a minute, while the target's log shows
// the probes arriving all along. A startup probe on the same port holds
// liveness back until the target listens, as Kubernetes intends: with no
// initial delay, a liveness probe may run before the target has bound its
// port, and with failureThreshold 1 that one run would rightly restart it.
func TestProbeTCPGRPCLiveness(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	dir := d.hostDir("steady")
	d.start()
	d.writeManifest("steady.yaml", `apiVersion: v1
kind: Pod
metadata: {name: steady}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: tcp
    image: busybox
    imagePullPolicy: IfNotPresent
    command: `+probeTargetCmd("tcp=8081")+`
    startupProbe:
      tcpSocket: {port: 8081}
      periodSeconds: 1
      failureThreshold: 30
    livenessProbe:
      tcpSocket: {port: 8081}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1
`+stateMount+`  - name: grpc
    image: busybox
    imagePullPolicy: IfNotPresent
    command: `+probeTargetCmd("grpc=8082")+`
    startupProbe:
      grpc: {port: 8082}
      periodSeconds: 1
      failureThreshold: 30
    livenessProbe:
      grpc: {port: 8082}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1
`+stateMount+stateVolume(dir))
	name := "steady-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	ids := map[string]string{"tcp": containerID(p, "tcp"), "grpc": containerID(p, "grpc")}
	d.hold("no restart and no failed liveness probe", 60*time.Second, func() (bool, string) {
		p, err := d.pod(name)
		if err != nil {
			return false, err.Error()
		}
		for c, id := range ids {
			if cs := containerStatus(p, c); cs.RestartCount != 0 || containerID(p, c) != id || cs.State.Running == nil {
				return false, fmt.Sprintf("container %s: %+v", c, cs)
			}
		}
		if n, msgs := d.eventCount(name, "Unhealthy", "Liveness probe failed"); n != 0 {
			return false, fmt.Sprint(msgs)
		}
		return true, ""
	})
	// Each probe ran about once a second: a minute is at least 50 runs.
	for c, words := range map[string][]string{"tcp": {"tcp connect"}, "grpc": {`grpc Check service="" -> SERVING`}} {
		if n := countLines(d.logLines(p, c, 0), words...); n < 50 {
			t.Errorf("%d %s probes reached the target in a minute, want at least 50", n, c)
		}
	}
}

// TestProbeExecTimeout: an exec probe that outlives timeoutSeconds is a
// failure: an Unhealthy event, and with liveness it counts toward
// failureThreshold until the container is restarted. The hung command is
// killed at the timeout: they do not pile up in the container.
func TestProbeExecTimeout(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("hang.yaml", `apiVersion: v1
kind: Pod
metadata: {name: hang}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: live
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    livenessProbe:
      exec: {command: ["sleep", "30"]}
      timeoutSeconds: 1
      periodSeconds: 2
      failureThreshold: 3
  - name: ready
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["sleep", "31"]}
      timeoutSeconds: 1
      periodSeconds: 1
`)
	name := "hang-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	readyID := containerID(p, "ready")
	pid := d.taskPID(readyID)
	// Six timed-out readiness runs: six hung commands had they been left.
	d.poll("six timed-out readiness runs", 60*time.Second, func() (bool, string) {
		n, msgs := d.eventCount(name, "Unhealthy", `Readiness probe failed: command timed out: "sleep 31" timed out after 1s`)
		return n >= 6, fmt.Sprint(msgs)
	})
	var counts []int
	for range 10 {
		counts = append(counts, len(pidsInNamespace(pid, "sleep", "31")))
		time.Sleep(200 * time.Millisecond) // sampling, not synchronisation
	}
	if slices.Max(counts) > 1 {
		t.Errorf("hung probe commands in the container, sampled over 2s: %v, want at most the one running now", counts)
	}
	p = d.waitPod(name, 60*time.Second, "live restarted by its hung liveness probe", func(p *v1.Pod) bool {
		return containerStatus(p, "live").RestartCount >= 1
	})
	if n, msgs := d.eventCount(name, "Unhealthy", `Liveness probe failed: command timed out: "sleep 30" timed out after 1s`); n < 3 {
		t.Errorf("%d timed-out liveness runs before the kill, want failureThreshold 3: %q", n, msgs)
	}
	if n, msgs := d.eventCount(name, "Killing", "Container live failed liveness probe, will be restarted"); n == 0 {
		t.Errorf("no Killing event: %q", msgs)
	}
	if cs := containerStatus(p, "ready"); cs.Ready || cs.RestartCount != 0 || containerID(p, "ready") != readyID {
		t.Errorf("ready container: ready %v, restartCount %d (readiness never restarts)", cs.Ready, cs.RestartCount)
	}
}

// TestProbeStartupGate: until its startup probe passes a container is
// neither started nor ready, and neither its liveness probe (which would
// fail and restart it) nor its readiness probe runs; once it passes, the
// container is started, both run, and it is ready.
func TestProbeStartupGate(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	dir := d.hostDir("gate")
	d.writeAtomic(dir+"/state", "http:/startup=503\nhttp:/live=500\n")
	d.start()
	d.writeManifest("gate.yaml", `apiVersion: v1
kind: Pod
metadata: {name: gate}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: `+probeTargetCmd("http=8080")+`
    startupProbe:
      httpGet: {path: /startup, port: 8080}
      periodSeconds: 1
      failureThreshold: 600
    livenessProbe:
      httpGet: {path: /live, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
`+stateMount+stateVolume(dir))
	name := "gate-" + node
	p := d.waitPod(name, 60*time.Second, "Running", running)
	id := containerID(p, "app")
	// Until five startup runs have failed, nothing else may happen.
	d.poll("five failed startup probes", 30*time.Second, func() (bool, string) {
		p, err := d.pod(name)
		if err != nil {
			return false, err.Error()
		}
		cs := containerStatus(p, "app")
		if started(cs) || cs.Ready || !podNotReady(p) || cs.RestartCount != 0 || containerID(p, "app") != id {
			t.Fatalf("before its startup probe passed: started %v ready %v restartCount %d, conditions %s",
				started(cs), cs.Ready, cs.RestartCount, conditionSummary(p))
		}
		lines := d.logLines(p, "app", 0)
		if n := countLines(lines, "GET /live") + countLines(lines, "GET /ready"); n != 0 {
			t.Fatalf("liveness or readiness probed before the startup probe passed: %q", lines)
		}
		n := countLines(lines, "GET /startup -> 503")
		return n >= 5, fmt.Sprintf("%d startup runs", n)
	})
	if cs := containerStatus(p, "app"); cs.Started == nil {
		t.Errorf("started unset before the startup probe passed, want false")
	}

	d.writeAtomic(dir+"/state", "")
	p = d.waitPod(name, 30*time.Second, "started and Ready", func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		return started(cs) && cs.Ready && podReady(p)
	})
	d.poll("liveness and readiness probes to run", 20*time.Second, func() (bool, string) {
		lines := d.logLines(p, "app", 0)
		return countLines(lines, "GET /live -> 200") > 0 && countLines(lines, "GET /ready -> 200") > 0, "not yet"
	})
	if cs := containerStatus(p, "app"); cs.RestartCount != 0 || containerID(p, "app") != id {
		t.Errorf("restarted: restartCount %d", cs.RestartCount)
	}
}

// TestProbeSurvivesRestart: podvisor stopped (SIGTERM, then kill -9) and
// started again while a container with liveness and readiness probes runs:
// the container is adopted, not restarted, stays Ready throughout, and its
// probes run again.
func TestProbeSurvivesRestart(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	dir := d.hostDir("adopt")
	d.start()
	d.writeManifest("adopt.yaml", `apiVersion: v1
kind: Pod
metadata: {name: adopt}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: `+probeTargetCmd("http=8080")+`
    livenessProbe:
      httpGet: {path: /live, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
`+stateMount+stateVolume(dir))
	name := "adopt-" + node
	p := d.waitPod(name, 60*time.Second, "Ready", func(p *v1.Pod) bool { return running(p) && podReady(p) })
	id := containerID(p, "app")
	for _, stop := range []struct {
		how  string
		stop func()
	}{
		{"SIGTERM", func() { d.stop(syscall.SIGTERM) }},
		{"kill -9", d.killGroup},
	} {
		stop.stop()
		before := countLines(d.logLines(p, "app", 0), "GET /live -> 200")
		d.start()
		// The API answers before the pod is adopted; from then on it
		// must never be other than running and Ready.
		d.waitPod(name, 30*time.Second, "adopted", func(*v1.Pod) bool { return true })
		d.hold("after "+stop.how+": same container, Ready", 5*time.Second, func() (bool, string) {
			p, err := d.pod(name)
			if err != nil {
				return false, err.Error()
			}
			cs := containerStatus(p, "app")
			if containerID(p, "app") != id || cs.RestartCount != 0 || !cs.Ready || !podReady(p) {
				return false, fmt.Sprintf("container %s restartCount %d ready %v, conditions %s", containerID(p, "app"), cs.RestartCount, cs.Ready, conditionSummary(p))
			}
			return true, ""
		})
		d.poll("liveness probes again after "+stop.how, 20*time.Second, func() (bool, string) {
			n := countLines(d.logLines(p, "app", 0), "GET /live -> 200")
			return n >= before+3, fmt.Sprintf("%d liveness runs, %d before the restart", n, before)
		})
	}
	if n, msgs := d.eventCount(name, "Killing", ""); n != 0 {
		t.Errorf("Killing events: %q", msgs)
	}
}
