package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHostnameOverride proves spec.hostnameOverride as kubelet gives it,
// read inside the container: the kernel's hostname and /etc/hostname are
// the override, in place of hostname and subdomain, and /etc/hosts names
// the pod IP by the override alone (no FQDN, even with --cluster-domain).
func TestHostnameOverride(t *testing.T) {
	d := newDaemon(t, "--cluster-domain", "cluster.test")
	d.start()

	const want = "db-1.example.org"
	d.writeManifest("override.yaml", `apiVersion: v1
kind: Pod
metadata: {name: override}
spec:
  terminationGracePeriodSeconds: 1
  hostname: web
  subdomain: sub
  hostnameOverride: `+want+`
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
	p := d.waitPod("override-"+node, 90*time.Second, "running", running)
	if p.Status.PodIP == "" {
		t.Fatal("no pod IP")
	}
	for _, cmd := range []string{"hostname", "cat /etc/hostname"} {
		out, errOut, code := d.runCLI("", "exec", "override-"+node, "--", "sh", "-c", cmd)
		if code != 0 || out != want+"\n" {
			t.Errorf("%s: exit %d %q%s, want %q", cmd, code, out, errOut, want)
		}
	}
	out, errOut, code := d.runCLI("", "exec", "override-"+node, "--", "cat", "/etc/hosts")
	line := fmt.Sprintf("%s\t%s\n", p.Status.PodIP, want)
	if code != 0 || !strings.Contains(out, line) || strings.Contains(out, "svc.cluster.test") || strings.Contains(out, "\tweb") {
		t.Errorf("/etc/hosts (exit %d%s):\n%s\nwant the line %q and neither web nor an FQDN", code, errOut, out, line)
	}
	d.removeManifest("override.yaml")
	d.waitGone("override-"+node, 60*time.Second)
}
