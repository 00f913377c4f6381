package e2e

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const volObjects = `apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data:
  a: alpha
  b: beta
  c: gamma
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData:
  password: pw-5e1b77d0
  user: admin
`

const volPod = `apiVersion: v1
kind: Pod
metadata:
  name: volpod
  labels: {app: web, tier: front}
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
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
    - {name: cfgall, mountPath: /etc/cfgall}
    - {name: sec, mountPath: /etc/sec}
    - {name: down, mountPath: /etc/down}
    - {name: proj, mountPath: /etc/proj}
    - {name: cfgall, mountPath: /etc/b-only, subPath: b}
    - {name: opt, mountPath: /etc/opt}
  volumes:
  - name: cfg
    configMap:
      name: conf
      defaultMode: 0600
      items:
      - {key: a, path: first/a.txt}
      - {key: b, path: b, mode: 0444}
  - name: opt
    configMap:
      name: conf
      optional: true
      items: [{key: missing, path: m}, {key: a, path: a}]
  - name: cfgall
    configMap: {name: conf}
  - name: sec
    secret:
      secretName: creds
      defaultMode: 0400
      items:
      - {key: password, path: password}
      - {key: user, path: user, mode: 0440}
  - name: down
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: app, fieldRef: {fieldPath: "metadata.labels['app']"}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
      - {path: meta/name, fieldRef: {fieldPath: metadata.name}, mode: 0400}
      - {path: mem, resourceFieldRef: {containerName: main, resource: limits.memory, divisor: 1Mi}}
      - {path: cpu, resourceFieldRef: {containerName: main, resource: limits.cpu, divisor: 1m}}
  - name: proj
    projected:
      defaultMode: 0440
      sources:
      - configMap:
          name: conf
          items: [{key: c, path: conf/c, mode: 0400}]
      - secret: {name: creds}
      - downwardAPI:
          items: [{path: tier, fieldRef: {fieldPath: "metadata.labels['tier']"}}]
      - configMap: {name: nothere, optional: true}
`

// A pod whose configMap volume needs a key the ConfigMap lacks, and one
// whose Secret is not there at all.
const volLate = `apiVersion: v1
kind: Pod
metadata: {name: late}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts: [{name: cfg, mountPath: /etc/cfg}]
  volumes:
  - name: cfg
    configMap:
      name: conf
      items: [{key: late, path: late}]
---
apiVersion: v1
kind: Pod
metadata: {name: nosecret}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts: [{name: s, mountPath: /etc/s}]
  volumes:
  - name: s
    secret: {secretName: later}
`

// sh runs a shell script in the pod's main container and returns its
// output; a non-zero exit fails the test.
func (d *daemon) sh(pod, script string) string {
	d.t.Helper()
	out, errOut, code := d.runCLI("", "exec", pod, "--", "sh", "-c", script)
	if code != 0 {
		d.t.Fatalf("exec %q in %s: exit %d: %s%s", script, pod, code, out, errOut)
	}
	return out
}

func creating(p *v1.Pod) bool {
	w := containerStatus(p, "main").State.Waiting
	return p.Status.Phase == v1.PodPending && w != nil && w.Reason == "ContainerCreating"
}

// TestVolumesContent reads, from inside the container, what configMap,
// secret, downwardAPI and projected volumes hold (items, modes,
// defaultMode, optional, Secret data decoded, a subPath), that the secret
// and projected volumes are tmpfs mounts and the others are not, and that
// all are read-only; a pod whose volume needs a missing key or Secret
// waits in ContainerCreating with kubelet's FailedMount event and runs once
// the object has it; removing the pods leaves no mount behind.
func TestVolumesContent(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("objects.yaml", volObjects)
	d.writeManifest("volpod.yaml", volPod)
	d.writeManifest("late.yaml", volLate)
	pod := "volpod-" + node
	d.waitPod(pod, 60*time.Second, "Running", running)

	// path → "mode content", read through the user-visible paths.
	out := d.sh(pod, `for f in /etc/cfg/first/a.txt /etc/cfg/b /etc/cfgall/a /etc/cfgall/b /etc/cfgall/c /etc/sec/password /etc/sec/user \
		/etc/down/labels /etc/down/app /etc/down/annotations /etc/down/meta/name /etc/down/mem /etc/down/cpu \
		/etc/proj/conf/c /etc/proj/password /etc/proj/user /etc/proj/tier /etc/b-only; do
		printf '%s %s %s|' "$f" "$(stat -L -c %a "$f")" "$(cat "$f")"; done`)
	got := map[string]string{}
	for _, e := range strings.Split(strings.TrimSuffix(out, "|"), "|") {
		if f, rest, ok := strings.Cut(e, " "); ok {
			got[f] = rest
		}
	}
	want := map[string]string{
		"/etc/cfg/first/a.txt": "600 alpha", "/etc/cfg/b": "444 beta",
		"/etc/cfgall/a": "644 alpha", "/etc/cfgall/b": "644 beta", "/etc/cfgall/c": "644 gamma",
		"/etc/sec/password": "400 pw-5e1b77d0", "/etc/sec/user": "440 admin",
		"/etc/down/labels": "644 app=\"web\"\ntier=\"front\"", "/etc/down/app": "644 web",
		"/etc/down/meta/name": "400 " + pod,
		"/etc/down/mem":       "644 64", "/etc/down/cpu": "644 " + strconv.Itoa(runtime.NumCPU()*1000),
		"/etc/proj/conf/c": "400 gamma", "/etc/proj/password": "440 pw-5e1b77d0", "/etc/proj/user": "440 admin",
		"/etc/proj/tier": "440 front", "/etc/b-only": "644 beta",
	}
	for f, w := range want {
		if got[f] != w {
			t.Errorf("%s: got %q, want %q", f, got[f], w)
		}
	}
	// Annotations hold the pod's and those kubelet sets on static pods.
	if a := got["/etc/down/annotations"]; !strings.HasPrefix(a, "644 ") || !strings.Contains(a, "\nnote=\"hello\"") || !strings.Contains(a, `kubernetes.io/config.source="file"`) {
		t.Errorf("/etc/down/annotations: got %q", a)
	}
	if out := d.sh(pod, `ls /etc/opt`); out != "a\n" {
		t.Errorf("optional volume with a missing key holds %q, want only a", out)
	}
	// kubelet's layout: user-visible names are symlinks through ..data.
	if out := d.sh(pod, `readlink /etc/cfg/first; readlink /etc/cfg/..data`); !strings.HasPrefix(out, "..data/first\n..20") {
		t.Errorf("volume layout: %q", out)
	}

	mountsOut := d.sh(pod, `cat /proc/mounts`)
	fsType := map[string]string{}
	opts := map[string]string{}
	for _, l := range strings.Split(mountsOut, "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 {
			fsType[f[1]], opts[f[1]] = f[2], f[3]
		}
	}
	for mp, tmpfs := range map[string]bool{"/etc/sec": true, "/etc/proj": true, "/etc/cfg": false, "/etc/down": false} {
		if (fsType[mp] == "tmpfs") != tmpfs {
			t.Errorf("%s is on %q; want tmpfs %v", mp, fsType[mp], tmpfs)
		}
		if !strings.HasPrefix(opts[mp], "ro") {
			t.Errorf("%s mounted %q; want read-only", mp, opts[mp])
		}
	}
	if _, _, code := d.runCLI("", "exec", pod, "--", "touch", "/etc/cfg/new"); code == 0 {
		t.Error("a configMap volume is writable")
	}

	// Missing key and missing Secret: ContainerCreating and FailedMount.
	for name, msg := range map[string]string{
		"late-" + node:     `MountVolume.SetUp failed for volume "cfg" : configmap references non-existent config key: late`,
		"nosecret-" + node: `MountVolume.SetUp failed for volume "s" : secret "later" not found`,
	} {
		d.waitPod(name, 30*time.Second, "ContainerCreating", creating)
		d.poll(name+" FailedMount event", 10*time.Second, func() (bool, string) {
			n, msgs := d.eventCount(name, "FailedMount", msg)
			return n > 0, fmt.Sprintf("FailedMount events: %q", msgs)
		})
	}
	if p, _ := d.pod("late-" + node); p != nil && !creating(p) {
		t.Errorf("late is no longer waiting: %+v", p.Status)
	}
	// The same write changes the Secret the running pod uses.
	objs := strings.Replace(volObjects, "  c: gamma\n", "  c: gamma\n  late: here\n", 1)
	objs = strings.Replace(objs, "pw-5e1b77d0", "pw-0c4d2e99", 1)
	d.writeManifest("objects.yaml", objs+`---
apiVersion: v1
kind: Secret
metadata: {name: later}
data: {k: dmFsdWU=}
`)
	d.waitPod("late-"+node, 30*time.Second, "Running once the key is there", running)
	d.waitPod("nosecret-"+node, 30*time.Second, "Running once the Secret is there", running)
	if out := d.sh("late-"+node, `cat /etc/cfg/late`); out != "here" {
		t.Errorf("late = %q", out)
	}
	if out := d.sh("nosecret-"+node, `cat /etc/s/k`); out != "value" {
		t.Errorf("secret k = %q, want the decoded value", out)
	}
	d.poll("the edited Secret in the running pod's volumes", 5*time.Second, func() (bool, string) {
		out, _, _ := d.runCLI("", "exec", pod, "--", "cat", "/etc/sec/password", "/etc/proj/password")
		return out == "pw-0c4d2e99pw-0c4d2e99", out
	})
	for _, vol := range []string{`volume "sec" from Secret "creds"`, `volume "proj" from ConfigMap "conf", Secret "creds"`, `volume "cfgall" from ConfigMap "conf"`} {
		if n, msgs := d.eventCount(pod, "VolumeUpdated", vol); n != 1 {
			t.Errorf("%d VolumeUpdated events for %s; saw %q", n, vol, msgs)
		}
	}
	if n, msgs := d.eventCount(pod, "VolumeUpdated", `volume "cfg" `); n != 0 {
		t.Errorf("volume cfg, whose items did not change, was rewritten: %q", msgs)
	}
	// No Secret value in podvisor's log or the events.
	logData, _ := os.ReadFile(d.logFile)
	var events strings.Builder
	for _, e := range d.podEvents(pod) {
		events.WriteString(e.Message + "\n")
	}
	for _, secret := range []string{"pw-5e1b77d0", "pw-0c4d2e99"} {
		if strings.Contains(string(logData), secret) || strings.Contains(events.String(), secret) {
			t.Errorf("a Secret value is in the log or the events")
		}
	}

	// podvisor killed and started again: the running pod keeps its
	// container and its volumes, and no second tmpfs hides the first.
	p, err := d.pod(pod)
	if err != nil {
		t.Fatal(err)
	}
	id := containerID(p, "main")
	tmpfsBefore := len(mountsUnder(d.state))
	d.stop(syscall.SIGKILL)
	d.start()
	d.waitPod(pod, 30*time.Second, "Running after podvisor's restart", running)
	if out := d.sh(pod, `cat /etc/sec/password /etc/proj/conf/c`); out != "pw-0c4d2e99gamma" {
		t.Errorf("after podvisor's restart the volumes hold %q", out)
	}
	if p, _ := d.pod(pod); p == nil || containerID(p, "main") != id {
		t.Errorf("the container changed across podvisor's restart")
	}
	d.hold("the mounts under the state dir", 2*time.Second, func() (bool, string) {
		n := len(mountsUnder(d.state))
		return n == tmpfsBefore, fmt.Sprintf("%d mounts after podvisor's restart, %d before", n, tmpfsBefore)
	})

	// Removed while podvisor is down (a crash): its next start stops the
	// pods, and their tmpfs mounts go with them.
	d.stop(syscall.SIGKILL)
	d.removeManifest("volpod.yaml")
	d.removeManifest("late.yaml")
	d.start()
	d.waitGone(pod, 30*time.Second)
	d.waitGone("nosecret-"+node, 30*time.Second)
	d.poll("no mount left under the state dir", 10*time.Second, func() (bool, string) {
		left := mountsUnder(d.state)
		return len(left) == 0, strings.Join(left, ", ")
	})
}

// liveLines is how many lines each key of the live ConfigMap has: enough
// that a write is not one short burst a reader could never catch halfway.
const liveLines = 4000

// volVersion is version n of two keys that are written together:
// liveLines lines each, all "v<n>".
func volVersion(n int) string {
	return strings.Repeat(fmt.Sprintf("v%d\n", n), liveLines)
}

func liveObjects(n int) string {
	v := strings.ReplaceAll(volVersion(n), "\n", "\\n")
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: live}\ndata:\n  a: \"%s\"\n  b: \"%s\"\n", v, v)
}

// The reader checks, as fast as it can: each file read through its path is
// whole (liveLines lines, the first and the last equal), and a and b read
// through one resolution of ..data (cd into it) are equal. Anything else
// goes to /tmp/bad.
var liveReader = `apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - |
      n=0
      while :; do
        for f in a b; do
          x=$(cat /etc/live/$f) || continue
          h=$(echo "$x" | head -1); t=$(echo "$x" | tail -1); l=$(echo "$x" | wc -l)
          [ "$h" = "$t" ] && [ "$l" = ` + strconv.Itoa(liveLines) + ` ] || echo "partial $f: $h..$t, $l lines" >> /tmp/bad
        done
        if cd /etc/live/..data 2>/dev/null; then
          if x=$(cat a 2>/dev/null) && y=$(cat b 2>/dev/null) && [ "$x" != "$y" ]; then
            echo "mixed: $(echo "$x" | head -1) $(echo "$y" | head -1)" >> /tmp/bad
          fi
          cd /
        fi
        n=$((n+1)); echo $n > /tmp/reads.new; mv /tmp/reads.new /tmp/reads
      done
    volumeMounts:
    - {name: live, mountPath: /etc/live}
    - {name: live, mountPath: /etc/live-a, subPath: a}
  volumes:
  - name: live
    configMap: {name: live}
`

// TestVolumesLiveUpdate edits a ConfigMap under a running pod: each
// version shows in the container's files within 5 s, with no restart (same
// container, restartCount 0) and a VolumeUpdated event, a subPath mount
// keeps the version it started with, and a reader looping over two keys
// written together never sees them differ or a file half written.
func TestVolumesLiveUpdate(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("live-objects.yaml", liveObjects(0))
	d.writeManifest("live.yaml", liveReader)
	pod := "live-" + node
	p := d.waitPod(pod, 60*time.Second, "Running", running)
	id := containerID(p, "main")
	reads := func() int {
		n, _ := strconv.Atoi(strings.TrimSpace(d.sh(pod, `cat /tmp/reads 2>/dev/null || echo 0`)))
		return n
	}
	before := reads()

	const versions = 20
	for n := 1; n <= versions; n++ {
		d.writeManifest("live-objects.yaml", liveObjects(n))
		start := time.Now()
		d.poll(fmt.Sprintf("version %d in the container", n), 5*time.Second, func() (bool, string) {
			out, _, _ := d.runCLI("", "exec", pod, "--", "head", "-1", "/etc/live/b")
			return strings.TrimSpace(out) == fmt.Sprintf("v%d", n), "b starts with " + out
		})
		t.Logf("version %d visible after %s", n, time.Since(start).Round(time.Millisecond))
	}
	if after := reads(); after-before < versions {
		t.Errorf("the reader ran only %d times during the edits", after-before)
	}
	if bad := d.sh(pod, `cat /tmp/bad 2>/dev/null; true`); bad != "" {
		t.Errorf("the reader saw half-written or mixed versions:\n%s", bad)
	}
	if out := d.sh(pod, `head -1 /etc/live-a`); strings.TrimSpace(out) != "v0" {
		t.Errorf("the subPath mount changed: %q, want v0 (a subPath is never updated)", out)
	}
	p, err := d.pod(pod)
	if err != nil {
		t.Fatal(err)
	}
	if cs := containerStatus(p, "main"); cs.RestartCount != 0 || containerID(p, "main") != id || cs.State.Running == nil {
		t.Errorf("the container restarted: restartCount %d, id %s (was %s)", cs.RestartCount, containerID(p, "main"), id)
	}
	if n, msgs := d.eventCount(pod, "VolumeUpdated", `volume "live" from ConfigMap "live"`); n < versions {
		t.Errorf("%d VolumeUpdated events, want %d; saw %q", n, versions, msgs)
	}
	// The same content again writes nothing.
	d.writeManifest("live-objects.yaml", "# a comment\n"+liveObjects(versions))
	d.hold("no rewrite of unchanged content", 2*time.Second, func() (bool, string) {
		n, _ := d.eventCount(pod, "VolumeUpdated", "")
		return n < versions+1, fmt.Sprintf("%d VolumeUpdated events", n)
	})
}

const fsGroupObjects = `apiVersion: v1
kind: ConfigMap
metadata: {name: fsconf}
data: {k: v}
---
apiVersion: v1
kind: Secret
metadata: {name: fssec}
stringData: {pw: s3cr3t-1f}
`

const fsGroupPod = `apiVersion: v1
kind: Pod
metadata: {name: fsg}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, fsGroup: 2000, fsGroupChangePolicy: OnRootMismatch}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: cfg, mountPath: /etc/cfg}
    - {name: sec, mountPath: /etc/sec}
    - {name: down, mountPath: /etc/down}
  volumes:
  - name: scratch
    emptyDir: {}
  - name: cfg
    configMap: {name: fsconf}
  - name: sec
    secret: {secretName: fssec, defaultMode: 0400}
  - name: down
    downwardAPI:
      items: [{path: name, fieldRef: {fieldPath: metadata.name}}]
`

// TestVolumesFSGroup runs as user 1000 with fsGroup 2000: the process has
// group 2000, the emptyDir, configMap, secret and downwardAPI volumes and
// their files belong to it, a 0400 secret is 0440 and readable by the
// user through the group, and the emptyDir is writable, its new files the
// group's.
func TestVolumesFSGroup(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("fs-objects.yaml", fsGroupObjects)
	d.writeManifest("fsg.yaml", fsGroupPod)
	pod := "fsg-" + node
	d.waitPod(pod, 60*time.Second, "Running", running)

	if out := d.sh(pod, `id -u; id -G`); !strings.HasPrefix(out, "1000\n") || !strings.Contains(" "+strings.TrimSpace(strings.SplitN(out, "\n", 2)[1])+" ", " 2000 ") {
		t.Errorf("id: %q; want uid 1000 with group 2000", out)
	}
	out := d.sh(pod, `for f in /scratch /etc/cfg /etc/cfg/k /etc/sec /etc/sec/pw /etc/down/name; do echo "$f $(stat -L -c '%g %a' $f)"; done`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] != "2000" {
			t.Errorf("%q: want group 2000", l)
		}
	}
	modes := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			modes[f[0]] = f[2]
		}
	}
	for f, want := range map[string]string{"/scratch": "2777", "/etc/sec/pw": "440", "/etc/cfg/k": "644"} {
		if modes[f] != want {
			t.Errorf("%s mode %s, want %s", f, modes[f], want)
		}
	}
	if out := d.sh(pod, `cat /etc/sec/pw`); out != "s3cr3t-1f" {
		t.Errorf("the secret read as user 1000: %q", out)
	}
	if out := d.sh(pod, `echo hi > /scratch/f && mkdir /scratch/d && stat -c '%g' /scratch/f /scratch/d`); strings.Fields(out)[0] != "2000" || strings.Fields(out)[1] != "2000" {
		t.Errorf("new files in the emptyDir: groups %q, want 2000", out)
	}
}
