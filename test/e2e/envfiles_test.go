package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// envFilePod is a pod whose init container writes an env file into an
// emptyDir and whose app container takes DB from it with fileKeyRef, and
// OPT, optional, with key optKey.
func envFilePod(name, optKey string, optional bool) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: config, emptyDir: {}}
  initContainers:
  - name: write
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /cfg/env && printf \"# written by init\\nDB='postgres://db:5432/app' # primary\\nMULTI='one\\ntwo'\\n\" > /cfg/env/app.env"]
    volumeMounts:
    - {name: config, mountPath: /cfg}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - name: DB
      valueFrom: {fileKeyRef: {volumeName: config, path: env/app.env, key: DB}}
    - name: MULTI
      valueFrom: {fileKeyRef: {volumeName: config, path: env/app.env, key: MULTI}}
    - name: OPT
      valueFrom: {fileKeyRef: {volumeName: config, path: env/app.env, key: %s, optional: %v}}
`, name, optKey, optional)
}

// TestEnvFiles proves env[].valueFrom.fileKeyRef as kubelet's EnvFiles:
// an init container writes a KEY='value' file into an emptyDir, and the
// app container, which does not mount the volume, gets the values in its
// environment (read inside it); an optional key that is missing leaves
// its variable out; a required one keeps the container waiting in
// CreateContainerConfigError with kubelet's message.
func TestEnvFiles(t *testing.T) {
	d := newDaemon(t)
	d.start()

	d.writeManifest("envfile.yaml", envFilePod("envfile", "NOPE", true))
	d.waitPod("envfile-"+node, 90*time.Second, "running", running)
	for _, tc := range []struct{ cmd, want string }{
		{`printf %s "$DB"`, "postgres://db:5432/app"},
		{`printf %s "$MULTI"`, "one\ntwo"},
		{`printf %s "${OPT-unset}"`, "unset"},
	} {
		out, errOut, code := d.runCLI("", "exec", "envfile-"+node, "--", "sh", "-c", tc.cmd)
		if code != 0 || out != tc.want {
			t.Errorf("%s: exit %d %q%s, want %q", tc.cmd, code, out, errOut, tc.want)
		}
	}

	d.writeManifest("nokey.yaml", envFilePod("nokey", "NOPE", false))
	p := d.waitPod("nokey-"+node, 90*time.Second, "CreateContainerConfigError", func(p *v1.Pod) bool {
		return waitingReason(p, "main") == "CreateContainerConfigError"
	})
	want := `environment variable key "NOPE" not found in file "env/app.env" of volume "config"`
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, want) {
		t.Errorf("waiting message %q, want %q", msg, want)
	}

	for _, n := range []string{"envfile", "nokey"} {
		d.removeManifest(n + ".yaml")
	}
	for _, n := range []string{"envfile", "nokey"} {
		d.waitGone(n+"-"+node, 60*time.Second)
	}
}
