package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// orderedPod is a busybox pod sharing dir at /shared; annotations go under
// metadata as written.
func orderedPod(name, annotations, dir, command string, probe bool) string {
	m := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
%sspec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: shared, mountPath: /shared}]
`, name, annotations, command)
	if probe {
		m += `    readinessProbe:
      exec: {command: ["test", "-f", "/shared/ready"]}
      periodSeconds: 1
`
	}
	return m + fmt.Sprintf("  volumes: [{name: shared, hostPath: {path: %s}}]\n", dir)
}

// TestPodWaitFor: an app whose annotation podvisor.io/wait-for names its
// database starts nothing while the database is not Ready (get and
// describe say so), and starts once it is: its container sees, from
// inside, the file that made the database Ready. Two pods waiting for
// each other are refused, the error naming both files and the field, in
// the daemon's events and log and in podvisor validate.
func TestPodWaitFor(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	dir := d.hostDir("shared")
	d.writeManifest("app.yaml", orderedPod("app", "  annotations: {podvisor.io/wait-for: db}\n", dir,
		"if test -f /shared/ready; then echo db-was-ready; else echo db-not-ready; fi; sleep 3600", false))
	app, db := "app-"+node, "db-"+node
	waitingForDB := func(p *v1.Pod) bool {
		w := containerStatus(p, "main").State.Waiting
		return w != nil && w.Reason == "WaitingFor:db"
	}
	p := d.waitPod(app, 30*time.Second, "waiting for db, which has no manifest", func(p *v1.Pod) bool {
		return waitingForDB(p) && strings.Contains(containerStatus(p, "main").State.Waiting.Message, "db (no manifest defines it)")
	})
	d.writeManifest("db.yaml", orderedPod("db", "", dir, "sleep 3600", true))
	d.waitPod(db, 60*time.Second, "Running, not Ready", func(p *v1.Pod) bool { return running(p) && podNotReady(p) })
	d.waitPod(app, 10*time.Second, "waiting for db, not Ready", func(p *v1.Pod) bool {
		return waitingForDB(p) && strings.Contains(containerStatus(p, "main").State.Waiting.Message, "db (not Ready)")
	})
	out, _, code := d.runCLI("", "get", "pods")
	if code != 0 || !strings.Contains(out, app) || !strings.Contains(out, "WaitingFor:db") {
		t.Errorf("podvisor get pods: exit %d:\n%s", code, out)
	}
	out, _, code = d.runCLI("", "describe", "pod", app)
	if code != 0 || !strings.Contains(out, "Waiting For:") || !strings.Contains(out, "db (not Ready); since ") {
		t.Errorf("podvisor describe pod %s: exit %d:\n%s", app, code, out)
	}
	sandboxes := len(d.sandboxIDs())
	d.hold("app starts nothing while db is not Ready", 3*time.Second, func() (bool, string) {
		p, err := d.pod(app)
		if err != nil || !waitingForDB(p) || p.Status.PodIP != "" {
			return false, fmt.Sprintf("%v %+v", err, p.Status)
		}
		return len(d.sandboxIDs()) == sandboxes, "a sandbox was made"
	})

	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitPod(db, 30*time.Second, "Ready", podReady)
	p = d.waitPod(app, 30*time.Second, "Running", running)
	if lines := d.logLines(p, "main", 0); len(lines) == 0 || lines[0] != "db-was-ready" {
		t.Errorf("app's first words %q: it started before db was Ready", lines)
	}
	out, _, _ = d.runCLI("", "describe", "pod", app)
	if strings.Contains(out, "Waiting For:") {
		t.Errorf("describe of a started pod still says it waits:\n%s", out)
	}

	// A cycle: both refused, each error naming both files.
	const field = `metadata.annotations["podvisor.io/wait-for"]`
	a, b := filepath.Join(d.manifests, "a.yaml"), filepath.Join(d.manifests, "b.yaml")
	d.writeManifest("a.yaml", orderedPod("a", "  annotations: {podvisor.io/wait-for: b}\n", dir, "sleep 3600", false))
	d.writeManifest("b.yaml", orderedPod("b", "  annotations: {podvisor.io/wait-for: a}\n", dir, "sleep 3600", false))
	cycle := fmt.Sprintf("a (%s) waits for b (%s) waits for a", a, b)
	d.poll("InvalidManifest events naming both files", 20*time.Second, func() (bool, string) {
		na, msgs := d.eventCount(node, "InvalidManifest", a+":5: "+field+": pods wait for each other in a cycle, so none would ever start: "+cycle)
		nb, _ := d.eventCount(node, "InvalidManifest", b+":5: "+field)
		return na > 0 && nb > 0, strings.Join(msgs, "\n")
	})
	d.waitLogLine("manifest error", a, cycle)
	for _, name := range []string{"a-" + node, "b-" + node} {
		if p, err := d.pod(name); err == nil {
			t.Errorf("pod %s of a cycle exists: %+v", name, p.Status)
		}
	}
	out, _, code = d.runCLI("", "validate", "--node-name", node, d.manifests)
	if code != 1 || !strings.Contains(out, a+":5: "+field) || !strings.Contains(out, b+":5: "+field) || !strings.Contains(out, cycle) {
		t.Errorf("podvisor validate: exit %d:\n%s", code, out)
	}
}
