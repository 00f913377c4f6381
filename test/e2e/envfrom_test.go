package e2e

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

const envObjects = `apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data:
  LEVEL: debug
  URL: "$(HOST)/x"
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData:
  password: pw-7f3a9c1e
  USER: admin
`

const envPod = `apiVersion: v1
kind: Pod
metadata:
  name: envpod
  labels: {app: web}
  annotations: {note: hello}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    resources:
      limits: {memory: 64Mi}
      requests: {cpu: 250m, memory: 3M}
    envFrom:
    - configMapRef: {name: conf}
    - prefix: DB_
      secretRef: {name: creds}
    - configMapRef: {name: absent, optional: true}
    env:
    - {name: HOST, value: h}
    - {name: GREETING, value: "$(LEVEL)-$(DB_USER)"}
    - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: LABEL, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: NOTE, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['note']"}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: HOST_IPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: CPU_REQ_M, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: CPU_LIM, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: MEM_LIM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: MEM_REQ_MI, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
    - {name: EPH_LIM, valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage}}}
    - {name: FROM_CM, valueFrom: {configMapKeyRef: {name: conf, key: URL}}}
    - {name: PASS, valueFrom: {secretKeyRef: {name: creds, key: password}}}
    - {name: OPT, valueFrom: {secretKeyRef: {name: creds, key: nope, optional: true}}}
`

const envWaiter = `apiVersion: v1
kind: Pod
metadata:
  name: waiter
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - {name: LATE, valueFrom: {configMapKeyRef: {name: conf, key: late}}}
`

// TestEnvFrom reads, from inside the running container, the environment
// every valueFrom kind and envFrom give it; a container whose ConfigMap key
// is missing waits in CreateContainerConfigError and runs as soon as the
// ConfigMap file gets the key; no Secret value shows in the log, events,
// describe or status.
func TestEnvFrom(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("objects.yaml", envObjects)
	d.writeManifest("envpod.yaml", envPod)
	d.writeManifest("waiter.yaml", envWaiter)
	p := d.waitPod("envpod-"+node, 60*time.Second, "Running", running)

	out, errOut, code := d.runCLI("", "exec", "envpod-"+node, "--", "env")
	if code != 0 {
		t.Fatalf("exec env: exit %d: %s", code, errOut)
	}
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"LEVEL": "debug", "URL": "$(HOST)/x", "DB_USER": "admin", "DB_password": "pw-7f3a9c1e",
		"HOST": "h", "GREETING": "debug-admin",
		"NAME": "envpod-" + node, "NS": "default", "UID": string(p.UID), "LABEL": "web", "NOTE": "hello",
		"NODE": node, "SA": "", "HOST_IP": p.Status.HostIP, "HOST_IPS": p.Status.HostIP,
		"POD_IP": p.Status.PodIP, "POD_IPS": p.Status.PodIP,
		"CPU_REQ_M": "250", "CPU_LIM": strconv.Itoa(runtime.NumCPU()), // unset: the node's CPUs
		"MEM_LIM_MI": "64", "MEM_REQ_MI": "3", // 2.86Mi rounds up
		"FROM_CM": "$(HOST)/x", "PASS": "pw-7f3a9c1e",
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(d.state, &fs); err != nil {
		t.Fatal(err)
	}
	want["EPH_LIM"] = strconv.FormatInt(int64(fs.Blocks)*fs.Bsize, 10) // unset: the state dir's filesystem
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %q (set %v), want %q", k, g, ok, v)
		}
	}
	if _, ok := got["OPT"]; ok {
		t.Errorf("OPT is set; an optional missing key leaves it out")
	}
	if p.Status.PodIP == "" || p.Status.HostIP == "" {
		t.Errorf("pod IP %q host IP %q", p.Status.PodIP, p.Status.HostIP)
	}

	w := d.waitPod("waiter-"+node, 30*time.Second, "CreateContainerConfigError", func(p *v1.Pod) bool {
		return waitingReason(p, "main") == "CreateContainerConfigError"
	})
	if msg := containerStatus(w, "main").State.Waiting.Message; msg != "couldn't find key late in ConfigMap default/conf" {
		t.Errorf("waiting message %q", msg)
	}
	if n, msgs := d.eventCount("waiter-"+node, "Failed", "couldn't find key late in ConfigMap default/conf"); n == 0 {
		t.Errorf("no Failed event for the missing key; Failed events: %q", msgs)
	}
	d.writeManifest("objects.yaml", strings.Replace(envObjects, "  LEVEL: debug\n", "  LEVEL: debug\n  late: here\n", 1))
	d.waitPod("waiter-"+node, 20*time.Second, "Running once the key is there", running)
	out, _, _ = d.runCLI("", "exec", "waiter-"+node, "--", "sh", "-c", "echo $LATE")
	if strings.TrimSpace(out) != "here" {
		t.Errorf("LATE = %q, want here", out)
	}

	// Secret values never leave the process.
	describe, _, _ := d.runCLI("", "describe", "pod", "envpod-"+node)
	status, _, _ := d.runCLI("", "get", "pod", "envpod-"+node, "-o", "yaml")
	logData, _ := os.ReadFile(d.logFile)
	var events strings.Builder
	for _, e := range append(d.podEvents("envpod-"+node), d.podEvents("waiter-"+node)...) {
		events.WriteString(e.Message + "\n")
	}
	for what, s := range map[string]string{"describe": describe, "status": status, "log": string(logData), "events": events.String()} {
		if strings.Contains(s, "pw-7f3a9c1e") {
			t.Errorf("the Secret's value is in the %s", what)
		}
	}
	if !strings.Contains(describe, "envpod-"+node) || !strings.Contains(status, "envpod-"+node) {
		t.Errorf("describe or get printed nothing useful:\n%s\n%s", describe, status)
	}
}
