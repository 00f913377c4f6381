package e2e

import (
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// leakMarker is the value of every Secret of TestSecretLeak, good and
// broken alike; leakParts are the pieces of it nothing may hold (its
// digits are all a number shows of it; a YAML decoder quotes a long
// value's first seven characters).
const leakMarker = "S3CR3T-MARKER-73195820"

var leakParts = []string{leakMarker, "S3CR3T", "73195820", base64.StdEncoding.EncodeToString([]byte(leakMarker))}

const leakSecret = `apiVersion: v1
kind: Secret
metadata:
  name: good-creds
stringData:
  pin: ` + leakMarker + `
`

const leakPod = `apiVersion: v1
kind: Pod
metadata:
  name: leakpod
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - {name: PIN, valueFrom: {secretKeyRef: {name: good-creds, key: pin}}}
    volumeMounts:
    - {name: creds, mountPath: /etc/creds}
  volumes:
  - name: creds
    secret: {secretName: good-creds}
`

// leakBundle is a List of a pod and a Secret: one document, so a broken
// Secret item keeps the pod's last good version, whose annotation
// podvisor.io/manifest-error is the Secret's error.
const leakBundle = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {name: bundle-creds}
  stringData:
    pin: "PIN_VALUE"
- apiVersion: v1
  kind: Pod
  metadata: {name: bundlepod}
  spec:
    terminationGracePeriodSeconds: 1
    containers:
    - name: main
      image: busybox
      imagePullPolicy: IfNotPresent
      command: ["sleep", "3600"]
      env:
      - {name: PIN, valueFrom: {secretKeyRef: {name: bundle-creds, key: pin}}}
`

// brokenSecrets are Secrets holding leakMarker, each broken in another
// way.
var brokenSecrets = map[string]string{
	"number.yaml":     "apiVersion: v1\nkind: Secret\nmetadata: {name: number}\nstringData:\n  pin: 73195820\n",
	"mapping.yaml":    "apiVersion: v1\nkind: Secret\nmetadata: {name: mapping}\nstringData:\n  pin: {" + leakMarker + ": " + leakMarker + "}\n",
	"list.yaml":       "apiVersion: v1\nkind: Secret\nmetadata: {name: list}\nstringData:\n  pin: [" + leakMarker + "]\n",
	"base64.yaml":     "apiVersion: v1\nkind: Secret\nmetadata: {name: base64}\ndata:\n  pin: " + leakMarker + "\n",
	"oversized.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: oversized}\nstringData:\n  pin: " + strings.Repeat(leakMarker, (1<<20)/len(leakMarker)+1) + "\n",
	"duplicate.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: duplicate}\nstringData:\n  pin: " + leakMarker + "\n  pin: " + leakMarker + "-2\n",
	"syntax.yaml":     "apiVersion: v1\nkind: Secret\nmetadata: {name: syntax}\nstringData:\n  pin: " + leakMarker + ": x\n",
	"quote.yaml":      "apiVersion: v1\nkind: Secret\nmetadata: {name: quote}\nstringData:\n  pin: \"" + leakMarker + "\n",
	"tag.yaml":        "apiVersion: v1\nkind: Secret\nmetadata: {name: tag}\nstringData:\n  pin: !!int " + leakMarker + "\n",
	"key.yaml":        "apiVersion: v1\nkind: Secret\nmetadata: {name: key}\nstringData:\n  ? [" + leakMarker + "]\n  : " + leakMarker + "\n",
	"anchor.yaml":     "apiVersion: v1\nkind: Secret\nmetadata: {name: anchor}\nstringData:\n  pin: *" + leakMarker + "\n",
	"dockerjson.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: dockerjson}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: " + leakMarker + "\n",
	"json.json":       `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "json"}, "stringData": {"pin": 73195820}}`,
}

// TestSecretLeak: Secrets holding a marker value, broken in every way a
// manifest can be, and a good one a pod uses. The good Secret's value
// reaches the container (its env and its secret volume, read from
// inside), and keeps doing so across a podvisor restart with its manifest
// broken meanwhile (last-known-good, with the container restarted after
// it, so that its env is resolved again). The marker is in no error
// (validate's, doctor's), no event, no pod annotation, no API answer
// (/objects, /pods, /events), no line of podvisor's log, and no file under
// the state directory but the Secret volumes' tmpfs.
func TestSecretLeak(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("good-creds.yaml", leakSecret)
	d.writeManifest("leakpod.yaml", leakPod)
	d.writeManifest("bundle.yaml", strings.Replace(leakBundle, "PIN_VALUE", leakMarker, 1))
	pod, bundle := "leakpod-"+node, "bundlepod-"+node
	d.waitPod(pod, 60*time.Second, "Running", running)
	d.waitPod(bundle, 60*time.Second, "Running", running)
	inside := func(what string) {
		t.Helper()
		if got := strings.TrimSpace(d.sh(pod, "cat /etc/creds/pin; echo; echo $PIN")); got != leakMarker+"\n"+leakMarker {
			t.Fatalf("%s: the container reads %q from its secret volume and env, want the Secret's value twice", what, got)
		}
	}
	inside("at start")

	for name, content := range brokenSecrets {
		d.writeManifest(name, content)
	}
	// The bundle's Secret breaks: its pod keeps running, marked.
	d.writeManifest("bundle.yaml", strings.Replace(leakBundle, `"PIN_VALUE"`, "73195820", 1))
	d.waitPod(bundle, 20*time.Second, "marked with its manifest's error", func(p *v1.Pod) bool {
		return running(p) && p.Annotations["podvisor.io/manifest-error"] != ""
	})
	// (Events of one reason about the node are aggregated after ten, as
	// kubelet's are: the log says each.)
	d.poll("a logged error for every broken Secret", 30*time.Second, func() (bool, string) {
		log, _ := os.ReadFile(d.logFile)
		logged := map[string]bool{}
		for _, l := range strings.Split(string(log), "\n") {
			if _, rest, ok := strings.Cut(l, `msg="manifest error"`); ok {
				if _, f, ok := strings.Cut(rest, " file="); ok {
					logged[strings.Fields(f)[0]] = true
				}
			}
		}
		for name := range brokenSecrets {
			if !logged[filepath.Join(d.manifests, name)] {
				return false, "no error logged for " + name
			}
		}
		return true, ""
	})

	// Restart with the good Secret's manifest broken too: its last good
	// version is kept, and a restarted container gets its value.
	d.stop(syscall.SIGTERM)
	d.writeManifest("good-creds.yaml", strings.Replace(leakSecret, "pin: "+leakMarker, "pin: 73195820", 1))
	d.start()
	d.poll("get secrets to mark good-creds as kept", 30*time.Second, func() (bool, string) {
		out, _, _ := d.runCLI("", "get", "secrets")
		return hasRow(out, "good-creds", "(!)"), out
	})
	before := containerStatus(d.waitPod(pod, 10*time.Second, "Running", running), "main").RestartCount
	if _, errOut, code := d.runCLI("", "restart", pod); code != 0 {
		t.Fatalf("restart %s: %s", pod, errOut)
	}
	d.waitPod(pod, 30*time.Second, "restarted and Running", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount > before
	})
	inside("after a podvisor restart with the Secret's manifest broken")

	// Everything podvisor says.
	outputs := map[string]string{}
	cli := func(args ...string) {
		out, errOut, _ := d.runCLI("", args...)
		outputs["podvisor "+strings.Join(args, " ")] = out + errOut
	}
	cli("get", "events", "-A", "-o", "json")
	cli("get", "pods", "-A", "-o", "json")
	cli("get", "secrets", "-A", "-o", "yaml")
	cli("describe", "pod", pod)
	cli("describe", "pod", bundle)
	cli("describe", "secret", "good-creds")
	for _, path := range []string{"/objects", "/objects?kind=Secret", "/pods", "/events"} {
		outputs["GET "+path] = d.apiGet(path)
	}
	for _, args := range [][]string{{"validate", "--node-name", node, d.manifests}, {"validate", "-o", "json", "--node-name", node, d.manifests}} {
		out, errOut, code := d.runCLI("", args...)
		if code != 1 || !strings.Contains(out, filepath.Join(d.manifests, "number.yaml")+":5: stringData[pin]: must be a string, not a number") {
			t.Errorf("podvisor %v: exit %d, no error for number.yaml at its line and field:\n%s%s", args, code, out, errOut)
		}
		outputs["podvisor "+strings.Join(args, " ")] = out + errOut
	}
	findings, _ := d.runDoctor(nil)
	outputs["podvisor doctor"] = findingLines(findings)
	p, err := d.pod(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Annotations["podvisor.io/manifest-error"]; !strings.Contains(a, "items[0].stringData[pin]: must be a string, not a number") {
		t.Errorf("bundle pod's manifest-error %q, want the Secret item's error, without its value", a)
	}
	outputs["bundle pod's annotations"] = strings.Join(mapValues(p.Annotations), "\n")
	if !strings.Contains(outputs["podvisor get events -A -o json"], "must be a string, not a number") {
		t.Errorf("no event says what is wrong with number.yaml:\n%s", outputs["podvisor get events -A -o json"])
	}
	log, err := os.ReadFile(d.logFile)
	if err != nil {
		t.Fatal(err)
	}
	outputs["podvisor's log"] = string(log)
	for what, out := range outputs {
		for _, part := range leakParts {
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, part) {
					t.Errorf("%s holds the Secret's value (%q): %s", what, part, l)
				}
			}
		}
	}

	// On disk: nothing under the state directory but the tmpfs mounted
	// for the Secret volumes holds it.
	var root unix.Stat_t
	if err := unix.Stat(d.state, &root); err != nil {
		t.Fatal(err)
	}
	read := 0
	filepath.WalkDir(d.state, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed meanwhile
		}
		if e.IsDir() {
			var st unix.Stat_t
			var sfs unix.Statfs_t
			if unix.Stat(path, &st) == nil && st.Dev != root.Dev && unix.Statfs(path, &sfs) == nil && sfs.Type == unix.TMPFS_MAGIC {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		read++
		for _, part := range leakParts {
			if strings.Contains(string(b), part) {
				t.Errorf("%s (on disk, under the state directory) holds the Secret's value (%q)", path, part)
			}
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(d.state, "manifests", "state.json")); err != nil || !strings.Contains(string(b), `"good-creds"`) || read < 3 {
		t.Errorf("the state directory's files were not all read (%d read), or state.json does not name the kept Secret: %v", read, err)
	}
	if fi, err := os.Stat(filepath.Join(d.run, "manifests", "secrets.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the last good Secrets in the run directory: %v %v, want a file of mode 0600", fi, err)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
