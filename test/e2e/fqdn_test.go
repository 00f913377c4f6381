package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// fqdnPod is a pod with hostname and subdomain, setHostnameAsFQDN as fqdn.
func fqdnPod(name, hostname string, fqdn bool) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  hostname: %s
  subdomain: sub
  setHostnameAsFQDN: %v
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, name, hostname, fqdn)
}

// TestSetHostnameAsFQDN proves hostname, subdomain and setHostnameAsFQDN
// with --cluster-domain as kubelet with containerd's CRI gives them, read
// inside the container: the kernel's hostname and /etc/hostname are the
// FQDN <hostname>.<subdomain>.<namespace>.svc.<domain> with
// setHostnameAsFQDN and the short name without; /etc/hosts names the pod
// IP by both either way; an FQDN over 64 characters keeps the pod from
// starting with kubelet's FailedCreatePodSandBox message.
func TestSetHostnameAsFQDN(t *testing.T) {
	d := newDaemon(t, "--cluster-domain", "cluster.test")
	d.start()

	for _, tc := range []struct {
		name, hostname string
		fqdn           bool
		want           string
	}{
		{"fqdn", "web", true, "web.sub.default.svc.cluster.test"},
		{"short", "web2", false, "web2"},
	} {
		d.writeManifest(tc.name+".yaml", fqdnPod(tc.name, tc.hostname, tc.fqdn))
		p := d.waitPod(tc.name+"-"+node, 90*time.Second, "running", running)
		if p.Status.PodIP == "" {
			t.Fatalf("%s: no pod IP", tc.name)
		}
		for _, cmd := range []string{"hostname", "cat /etc/hostname"} {
			out, errOut, code := d.runCLI("", "exec", tc.name+"-"+node, "--", "sh", "-c", cmd)
			if code != 0 || out != tc.want+"\n" {
				t.Errorf("%s: %s: exit %d %q%s, want %q", tc.name, cmd, code, out, errOut, tc.want)
			}
		}
		out, errOut, code := d.runCLI("", "exec", tc.name+"-"+node, "--", "cat", "/etc/hosts")
		line := fmt.Sprintf("%s\t%s.sub.default.svc.cluster.test\t%s\n", p.Status.PodIP, tc.hostname, tc.hostname)
		if code != 0 || !strings.Contains(out, line) {
			t.Errorf("%s: /etc/hosts (exit %d%s):\n%s\nwant the line %q", tc.name, code, errOut, out, line)
		}
	}

	long := strings.Repeat("a", 40)
	d.writeManifest("long.yaml", fqdnPod("long", long, true))
	want := "Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN " +
		long + ".sub.default.svc.cluster.test is too long (64 characters is the max, 69 characters requested)"
	d.poll("FailedCreatePodSandBox for the long FQDN", 60*time.Second, func() (bool, string) {
		n, msgs := d.eventCount("long-"+node, "FailedCreatePodSandBox", want)
		return n > 0, strings.Join(msgs, "\n")
	})
	if p, err := d.pod("long-" + node); err != nil || p.Status.Phase != v1.PodPending || containerStatus(p, "main").State.Running != nil {
		t.Errorf("long: %v, want Pending with nothing running", err)
	}

	for _, n := range []string{"fqdn", "short", "long"} {
		d.removeManifest(n + ".yaml")
	}
	for _, n := range []string{"fqdn", "short", "long"} {
		d.waitGone(n+"-"+node, 60*time.Second)
	}
}
