package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// objSecret is the test Secret's value: it must be in no CLI output and no
// API response.
const objSecret = "s3cr3t-4f9b2a7e1d"

const objDocs = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-conf
  labels: {app: objs}
data:
  LEVEL: LEVEL_VALUE
---
apiVersion: v1
kind: Secret
metadata:
  name: app-creds
stringData:
  password: ` + objSecret + `
`

const objPod = `apiVersion: v1
kind: Pod
metadata:
  name: objpod
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - {name: LEVEL, valueFrom: {configMapKeyRef: {name: app-conf, key: LEVEL}}}
    - {name: PASS, valueFrom: {secretKeyRef: {name: app-creds, key: password}}}
    - {name: OPT, valueFrom: {configMapKeyRef: {name: nowhere, key: x, optional: true}}}
`

// TestObjectsCLI: get and describe show the local ConfigMaps and Secrets
// in use with their file and the pods using them; a Secret's value is in
// no CLI output (-o json and yaml included) and no API response. A
// ConfigMap whose document becomes invalid keeps its last good version:
// get marks it and describe shows the file's error, and a container
// restarted after that gets its env from the last good version, read from
// inside the container.
func TestObjectsCLI(t *testing.T) {
	d := newDaemon(t)
	d.start()
	d.writeManifest("objs.yaml", strings.Replace(objDocs, "LEVEL_VALUE", "first-good", 1))
	d.writeManifest("objpod.yaml", objPod)
	pod := "objpod-" + node
	d.waitPod(pod, 60*time.Second, "Running", running)
	objsPath := filepath.Join(d.manifests, "objs.yaml")

	// outputs collects everything printed, to look for the Secret's value.
	var outputs []string
	cli := func(args ...string) string {
		t.Helper()
		out, errOut, code := d.runCLI("", args...)
		outputs = append(outputs, strings.Join(args, " ")+"\n"+out+errOut)
		if code != 0 {
			t.Errorf("podvisor %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	if env := d.containerEnv(pod); env["LEVEL"] != "first-good" || env["PASS"] != objSecret {
		t.Fatalf("env at start: LEVEL=%q PASS set %v", env["LEVEL"], env["PASS"] == objSecret)
	}

	out := cli("get", "configmaps")
	if !hasRow(out, "app-conf", "1") {
		t.Errorf("get configmaps:\n%s", out)
	}
	out = cli("get", "cm", "-o", "wide")
	if !hasRow(out, "app-conf", "1", "*", objsPath+":4", pod) {
		t.Errorf("get cm -o wide:\n%s", out)
	}
	out = cli("get", "secrets", "-o", "wide")
	if !hasRow(out, "app-creds", "Opaque", "1", "*", objsPath+":12", pod) {
		t.Errorf("get secrets -o wide:\n%s", out)
	}
	out = cli("describe", "configmap", "app-conf")
	if !strings.Contains(out, "LEVEL:\n----\nfirst-good\n") || !strings.Contains(out, "Manifest:     "+objsPath+":4") ||
		!strings.Contains(out, pod+"  spec.containers[0].env[0].valueFrom.configMapKeyRef (key LEVEL)") {
		t.Errorf("describe configmap:\n%s", out)
	}
	out = cli("describe", "secret", "app-creds")
	if !strings.Contains(out, "password:  17 bytes") || !strings.Contains(out, "Type:  Opaque") || !strings.Contains(out, pod+"  spec.containers[0].env[1]") {
		t.Errorf("describe secret:\n%s", out)
	}
	for _, args := range [][]string{
		{"get", "secrets", "-o", "json"}, {"get", "secrets", "-o", "yaml"}, {"get", "secret", "app-creds", "-o", "json"},
		{"get", "secret", "app-creds", "-o", "yaml"}, {"get", "secrets", "-o", "jsonpath={.items[*].data}"},
		{"get", "cm", "-o", "yaml"}, {"describe", "pod", pod},
	} {
		out := cli(args...)
		if strings.HasPrefix(args[1], "secret") && !strings.Contains(out, "password") {
			t.Errorf("podvisor %v does not name the key:\n%s", args, out)
		}
	}
	for _, path := range []string{"/objects", "/objects?kind=Secret", "/pods", "/events"} {
		outputs = append(outputs, path+"\n"+d.apiGet(path))
	}
	for _, o := range outputs {
		if strings.Contains(o, objSecret) {
			t.Errorf("the Secret's value is in the output of %s", o)
		}
	}

	// The ConfigMap's document becomes invalid: the last good version is
	// kept, shown and used; a restarted container gets it.
	d.writeManifest("objs.yaml", strings.Replace(objDocs, "LEVEL: LEVEL_VALUE", "LEVEL: [second-bad]", 1))
	d.poll("get cm to mark app-conf", 20*time.Second, func() (bool, string) {
		out, _, _ := d.runCLI("", "get", "cm")
		return hasRow(out, "app-conf", "(!)", "1"), out
	})
	out = cli("describe", "cm", "app-conf")
	if !strings.Contains(out, "Manifest Error:  "+objsPath+":7: data[LEVEL]") || !strings.Contains(out, "first-good") {
		t.Errorf("describe cm after the break:\n%s", out)
	}
	before := containerStatus(d.waitPod(pod, 5*time.Second, "Running", running), "main").RestartCount
	cli("restart", pod)
	d.waitPod(pod, 30*time.Second, "restarted and Running", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").RestartCount > before
	})
	if env := d.containerEnv(pod); env["LEVEL"] != "first-good" {
		t.Errorf("after a restart with the ConfigMap broken: LEVEL=%q, want the last good first-good", env["LEVEL"])
	}

	// Fixed with a new value: no mark, and the next start gets it.
	d.writeManifest("objs.yaml", strings.Replace(objDocs, "LEVEL_VALUE", "third-good", 1))
	d.poll("get cm to show the fixed app-conf", 20*time.Second, func() (bool, string) {
		out, _, _ := d.runCLI("", "get", "cm")
		return hasRow(out, "app-conf", "1") && !strings.Contains(out, "(!)"), out
	})
	cli("restart", pod)
	d.poll("LEVEL from the fixed ConfigMap", 30*time.Second, func() (bool, string) {
		env := d.containerEnv(pod)
		return env["LEVEL"] == "third-good", "LEVEL=" + env["LEVEL"]
	})
}

// containerEnv is the environment of the pod's main container, read from
// inside it; empty while it cannot be read.
func (d *daemon) containerEnv(pod string) map[string]string {
	out, _, code := d.runCLI("", "exec", pod, "--", "env")
	env := map[string]string{}
	if code != 0 {
		return env
	}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env
}

// apiGet is the body of a GET on the daemon's socket.
func (d *daemon) apiGet(path string) string {
	d.t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.sock)
		},
	}}
	resp, err := c.Get("http://podvisor" + path)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		d.t.Fatalf("GET %s: %s %v\n%s", path, resp.Status, err, b)
	}
	return string(b)
}

// hasRow reports whether a table has a line whose first cells are cells
// ("*" matches any).
func hasRow(table string, cells ...string) bool {
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) < len(cells) {
			continue
		}
		match := true
		for i, c := range cells {
			match = match && (c == "*" || f[i] == c)
		}
		if match {
			return true
		}
	}
	return false
}
