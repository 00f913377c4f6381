package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/doctor"
)

const permsSecret = `apiVersion: v1
kind: Secret
metadata:
  name: NAME
stringData:
  token: tok-9a1c
`

const permsPod = `apiVersion: v1
kind: Pod
metadata:
  name: permspod
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - {name: TOKEN, valueFrom: {secretKeyRef: {name: open, key: token}}}
`

// TestSecretManifestPermissions: a manifest holding a Secret that others
// can read (0644) gets a ManifestWarning event, a podvisor validate
// warning and a podvisor doctor finding, each with the chmod that fixes
// it; the pod using the Secret runs all the same (the Secret's value is in
// its env). A 0600 one gets none of them; chmod 644 on it, at run time,
// gets the event.
func TestSecretManifestPermissions(t *testing.T) {
	d := newDaemon(t)
	d.start()
	open, private := filepath.Join(d.manifests, "open.yaml"), filepath.Join(d.manifests, "private.yaml")
	d.writeManifest("open.yaml", strings.Replace(permsSecret, "NAME", "open", 1))
	writePrivate := filepath.Join(d.dir, ".private.yaml")
	if err := os.WriteFile(writePrivate, []byte(strings.Replace(permsSecret, "NAME", "private", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(writePrivate, private); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("permspod.yaml", permsPod)
	if fi, err := os.Stat(open); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("open.yaml: %v %v, want mode 0644", fi, err)
	}

	pod := "permspod-" + node
	d.waitPod(pod, 60*time.Second, "Running", running)
	if env := d.containerEnv(pod); env["TOKEN"] != "tok-9a1c" {
		t.Errorf("TOKEN=%q: the Secret of a readable manifest must still be used", env["TOKEN"])
	}

	fix := "chmod 600 " + open
	warnings := func(path string) []string {
		l, err := api.NewClient(d.sock).Events(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range l.Items {
			if e.Reason == "ManifestWarning" && e.Type == "Warning" && strings.HasPrefix(e.Message, path+": holds a Secret") {
				out = append(out, e.Message)
			}
		}
		return out
	}
	d.poll("a ManifestWarning event about open.yaml", 20*time.Second, func() (bool, string) {
		w := warnings(open)
		return len(w) == 1 && strings.HasSuffix(w[0], fix) && strings.Contains(w[0], "readable by its group and others (mode 0644)"), strings.Join(w, "\n")
	})
	if w := warnings(private); len(w) != 0 {
		t.Errorf("events about the 0600 private.yaml: %q", w)
	}

	out, errOut, code := d.runCLI("", "validate", "--node-name", node, d.manifests)
	if want := "warning: " + open + ": holds a Secret and is readable by its group and others (mode 0644): anyone who can read it has the Secret's values; fix with " + fix + "\n"; code != 0 || out != want {
		t.Errorf("validate: exit %d, output %q (stderr %q), want %q", code, out, errOut, want)
	}

	findings, _ := d.runDoctor(nil)
	requireFinding(t, findings, "manifests", doctor.Warn, open, "holds a Secret")
	for _, f := range findings {
		if strings.Contains(f.Message, open) && !strings.HasPrefix(f.Fix, fix) {
			t.Errorf("doctor's finding about open.yaml: fix %q, want %q", f.Fix, fix)
		}
		if strings.Contains(f.Message, private) {
			t.Errorf("doctor has a finding about the 0600 private.yaml: %+v", f)
		}
	}

	// A chmod is noticed at once, without a change of content.
	if err := os.Chmod(private, 0o640); err != nil {
		t.Fatal(err)
	}
	d.poll("a ManifestWarning event about private.yaml after chmod 640", 20*time.Second, func() (bool, string) {
		w := warnings(private)
		return len(w) == 1 && strings.HasSuffix(w[0], "chmod 600 "+private) && strings.Contains(w[0], "readable by its group (mode 0640)"), strings.Join(w, "\n")
	})
	if err := os.Chmod(open, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := d.runCLI("", "validate", "--node-name", node, d.manifests); code != 0 || out != "" {
		t.Errorf("validate after chmod 600: exit %d, output %q", code, out)
	}
	d.waitPod(pod, 5*time.Second, "still Running", running)
}
