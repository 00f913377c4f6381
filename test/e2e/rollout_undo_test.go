package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
)

// TestRolloutUndoRootOnly: rollout undo changes what the node runs, which
// only root decides. Over the TLS port a client the policy allows create
// nodes/proxy is refused 403 and the pod keeps running the manifest's
// revision; on the socket `podvisor rollout undo` works and is audited
// with the caller's uid; and even there an undo to a revision that was
// privileged with a hostPath, when the manifest no longer is, is refused,
// naming each privilege, and the pod keeps its spec.
func TestRolloutUndoRootOnly(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	addr, ca := tlsPort(t, d, "podvisor")
	d.extraArgs = append(d.extraArgs, tlsPolicyArgs(t, d)...) // admin: get and create
	d.start()
	name := "web-" + node
	sleep := `trap 'exit 0' TERM; while true; do sleep 1; done`

	// Revision 1 is privileged and mounts a host directory; root then
	// narrows the manifest (revision 2), and edits it again (3).
	host := d.hostDir("undo")
	d.writeManifest("web.yaml", webPod(1, 2, sleep, fmt.Sprintf(`    securityContext: {privileged: true}
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - name: host
    hostPath: {path: %s}
`, host)))
	d.runningRev(1, 60*time.Second)
	d.writeManifest("web.yaml", rolloutPod(2, false))
	d.runningRev(2, 30*time.Second)
	d.writeManifest("web.yaml", rolloutPod(3, false))
	d.runningRev(3, 30*time.Second)
	p, err := d.pod(name)
	if err != nil {
		t.Fatal(err)
	}
	rev3 := containerID(p, "app")
	keepsRev3 := func(what string) {
		t.Helper()
		d.hold(what, 3*time.Second, func() (bool, string) {
			p, err := d.pod(name)
			if err != nil {
				return false, err.Error()
			}
			if id := containerID(p, "app"); id != rev3 {
				return false, "container " + id + ", revision 3's was " + rev3
			}
			return true, ""
		})
		d.runningRev(3, 5*time.Second)
	}

	// (1) The TLS port: authenticated and authorized (admin may create
	// nodes/proxy), then refused by podvisor itself.
	remote, _ := tlsClient(t, d, addr, ca, "admin")
	_, err = remote.RolloutUndo(t.Context(), "web", 2)
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Code != http.StatusForbidden || !strings.Contains(ae.Message, "undo changes what the node runs") ||
		!strings.Contains(ae.Message, "only root may do that, on the node's local socket") {
		t.Fatalf("undo over TLS as admin: %v, want 403 saying only root may, on the socket\n%s", err, d.logTail())
	}
	d.waitLogLine(`msg="remote API session"`, "action=rollout-undo", "pod=web", "toRevision=2", "decision=refused")
	keepsRev3("revision 3 after the refused remote undo")
	// A client the policy does not allow is the Filter's to refuse, as
	// before: the handler's refusal comes after authorization.
	sc, _ := tlsClient(t, d, addr, ca, "stranger")
	if _, err := sc.RolloutUndo(t.Context(), "web", 2); !errors.As(err, &ae) || ae.Code != http.StatusForbidden ||
		!strings.Contains(ae.Message, "Forbidden (user=stranger, verb=create, resource=nodes, subresource=proxy)") {
		t.Errorf("undo over TLS as a stranger: %v, want the Filter's 403", err)
	}

	// (3) The socket, to revision 1: broader than the manifest's spec,
	// refused, naming each privilege.
	_, errOut, code := d.runCLI("", "rollout", "undo", "web", "--to-revision", "1")
	for _, want := range []string{`error: rollout undo of pod "web" refused`, "revision 1 has privileges the manifest (revision 3) does not grant",
		"  - volume host: hostPath " + host, "  - container app: privileged", "only root grants privileges, by editing the manifest"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("undo to the privileged revision 1: exit %d, %q: want exit 1 and %q", code, errOut, want)
		}
	}
	d.waitLogLine(`msg="local API session"`, "action=rollout-undo", "pod="+name, "toRevision=1", "uid=0", "decision=refused", "container app: privileged")
	keepsRev3("revision 3 after the refused undo to revision 1")

	// (2) The socket, to the one before: done, and audited with the
	// caller's uid and the revision applied.
	if out, errOut, code := d.runCLI("", "rollout", "undo", "web"); code != 0 || strings.TrimSpace(out) != "pod/"+name+" rolled back to revision 2" {
		t.Fatalf("rollout undo on the socket: exit %d, %q %q", code, out, errOut)
	}
	d.runningRev(2, 30*time.Second)
	d.waitLogLine(`msg="local API session"`, "action=rollout-undo", "pod="+name, "namespace=default", "toRevision=previous", "uid=0", "pid=", "decision=allowed", "revision=2")
}
