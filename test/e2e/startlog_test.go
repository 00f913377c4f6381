package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestStartQuietBesideDocs: podvisor started on a manifests directory that
// also holds docs logs nothing about them at Info or above, still reports
// a broken manifest loudly, and logs it as fixed once it is.
func TestStartQuietBesideDocs(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	quiet := map[string]string{
		"README.md":      "# Pods of this box\n",
		"notes.txt":      "web is the front end\n",
		"LICENSE":        "MIT\n",
		".hidden.yaml":   "junk\n",
		"web.yaml~":      "junk\n",
		"dashboard.json": `{"title": "podvisor", "panels": []}`,
	}
	for name, data := range quiet {
		if err := os.WriteFile(filepath.Join(d.manifests, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broken := `apiVersion: v1
kind: Pod
metadata: {name: quiet}
spec:
  containers:
  - name: c
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`
	d.writeManifest("quiet.yaml", broken+"    stdin: true\n")
	d.start()
	path := filepath.Join(d.manifests, "quiet.yaml")
	d.waitLogLine("level=WARN", `msg="manifest error"`, "file="+path, "spec.containers[0].stdin")
	off := d.logSize()
	d.writeManifest("quiet.yaml", broken)
	d.waitPod("quiet-"+node, time.Minute, "Running", running)
	d.waitLogLine("level=INFO", `msg="manifest fixed"`, "file="+path)
	for _, line := range strings.Split(d.logSince(0), "\n") {
		if strings.Contains(line, "level=DEBUG") {
			continue
		}
		for name := range quiet {
			if strings.Contains(line, name) {
				t.Errorf("%s logged above Debug: %s", name, line)
			}
		}
	}
	if d.logHasLine(off, `msg="manifest error"`) {
		t.Errorf("an error logged after the fix:\n%s", d.logSince(off))
	}
}

// TestSocketBeforeOrAfterCommand: the real binary takes --socket before the
// command and after it.
func TestSocketBeforeOrAfterCommand(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.start()
	d.writeManifest("sock.yaml", `apiVersion: v1
kind: Pod
metadata: {name: sock}
spec:
  containers:
  - name: c
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`)
	d.waitPod("sock-"+node, time.Minute, "Running", running)
	for _, args := range [][]string{
		{"--socket", d.sock, "get", "pods", "sock", "-o", "json"},
		{"get", "pods", "sock", "-o", "json", "--socket", d.sock},
		{"--socket", "/nonexistent/podvisor.sock", "get", "pods", "sock", "-o", "json", "--socket", d.sock},
	} {
		cmd := exec.Command(podvisorBin, args...)
		cmd.Env = append(os.Environ(), "PODVISOR_SOCKET=/nonexistent/env.sock")
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("podvisor %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		var pod v1.Pod // one pod named: the Pod, as kubectl prints it
		if err := json.Unmarshal(out, &pod); err != nil || pod.Kind != "Pod" || pod.Name != "sock-"+node {
			t.Errorf("podvisor %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
