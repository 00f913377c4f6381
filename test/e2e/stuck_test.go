package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/registry"
)

// TestDescribeStuck (issue 20): the first line of `podvisor describe pod`
// names what holds each stuck pod — an image its registry does not have,
// a CNI plugin whose ADD fails, a ConfigMap key a volume names that does
// not exist, a crash loop with its exit and last log lines, a startup
// probe with its output — and a pod that is fine has no such line. One
// daemon runs them all: its only CNI plugin fails every ADD, so every pod
// but the CNI one uses the host's network.
func TestDescribeStuck(t *testing.T) {
	requireEnv(t)
	reg := registry.Start(t, registry.Options{})
	cni := newHangingCNI(t, t.TempDir())
	cni.release() // every ADD fails at once with "released by the test"
	d := newDaemon(t, cni.args()...)
	d.start()

	pod := func(name, hostNetwork, container string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    imagePullPolicy: IfNotPresent
%s`, name, hostNetwork, container)
	}
	image := reg.Host + "/nope/app:2"
	d.writeManifest("objects.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  y: "1"
`)
	cases := []struct {
		name, manifest, want string
		also                 string // further on the line
	}{
		{"fine", pod("fine", "true", `    image: busybox
    command: ["sleep", "3600"]
`), "", ""},
		{"image", pod("image", "true", `    image: `+image+`
    command: ["sleep", "3600"]
`), fmt.Sprintf(`Stuck: image %q cannot be pulled from %s: `, image, reg.Host), "not found"},
		{"cni", pod("cni", "false", `    image: busybox
    command: ["sleep", "3600"]
`), `Stuck: CNI plugin "pvhang" failed ADD: released by the test`, ""},
		{"config", pod("config", "true", `    image: busybox
    command: ["sleep", "3600"]
    volumeMounts: [{name: cfg, mountPath: /cfg}]
  volumes:
  - name: cfg
    configMap: {name: app, items: [{key: x, path: x}]}
`), `Stuck: volume "cfg": ConfigMap "app" has no key "x"`, ""},
		{"crash", pod("crash", "true", `    image: busybox
    command: ["sh", "-c", "for w in one two three four; do echo $w; done; exit 3"]
`), `Stuck: back-off restarting container "main" (last exit 3, Error); last log lines: "two" "three" "four"`, ""},
		{"probe", pod("probe", "true", `    image: busybox
    command: ["sleep", "3600"]
    startupProbe:
      exec: {command: ["sh", "-c", "echo not listening yet; exit 1"]}
      periodSeconds: 1
      failureThreshold: 1000
`), `Stuck: startup probe of "main" failing: not listening yet`, ""},
	}
	for _, c := range cases {
		d.writeManifest(c.name+".yaml", c.manifest)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := *d // d's helpers, failing this subtest
			d.t = t
			name := c.name + "-" + node
			if c.want == "" {
				d.waitPod(name, 60*time.Second, "Running and Ready", podReady)
			}
			var first string
			d.poll("describe's first line to name the cause", 30*time.Second, func() (bool, string) {
				out, errOut, err := d.cli("describe", "pod", name)
				if err != nil {
					return false, fmt.Sprintf("%v: %s", err, errOut)
				}
				first, _, _ = strings.Cut(out, "\n")
				if c.want == "" {
					return strings.HasPrefix(first, "Name:"), fmt.Sprintf("first line %q", first)
				}
				if strings.HasPrefix(first, c.want) && strings.Contains(first, c.also) {
					return true, ""
				}
				why := fmt.Sprintf("first line %q, want %q...", first, c.want)
				if p, err := d.pod(name); err == nil {
					why += fmt.Sprintf("; status %+v; annotations %v", p.Status, p.Annotations)
				}
				return false, why
			})
			t.Logf("checked: describe pod %s: %s", name, first)
		})
	}
}
