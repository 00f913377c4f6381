package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/layout"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// pinnedNetNSPod has two containers. aside (first by name and in the
// spec) moves its process into a network namespace of its own (unshare
// -n, then sleep as the same pid): a port-forward that finds the pod's
// namespace through a container's process, as /proc/<pid>/ns/net, lands
// there. web serves its hostname on the pod's localhost only, which
// only the pod's own namespace reaches.
const pinnedNetNSPod = `apiVersion: v1
kind: Pod
metadata:
  name: pf
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: aside
    image: busybox
    imagePullPolicy: IfNotPresent
    securityContext: {privileged: true}
    command: ["unshare", "-n", "sleep", "3600"]
  - name: web
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo served-by-$(cat /etc/hostname) > /www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /www"]
`

// TestPortForwardPinnedNetNS: kubelet's port-forward on the TLS port
// reaches the pod's localhost through the network namespace its sandbox
// pinned, after the serving container restarted (a new process), and
// whatever namespace another container's process went into.
func TestPortForwardPinnedNetNS(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.writeManifest("pf.yaml", pinnedNetNSPod)
	addr, ca := tlsDaemon(t, d, limitsPolicy)
	p := d.waitPod("pf", 60*time.Second, "running", running)
	admin, err := ca.Client(d.dir, "admin")
	if err != nil {
		t.Fatal(err)
	}

	// The premise: aside's process is in another namespace than the one
	// the sandbox pinned.
	pinned := filepath.Join(layout.Layout{RunDir: d.run}.SandboxDir(d.sandboxOf(p)), "net")
	pinnedIno, asideIno := nsInode(t, pinned), nsInode(t, fmt.Sprintf("/proc/%d/ns/net", d.taskPID(containerID(p, "aside"))))
	if pinnedIno == asideIno {
		t.Fatalf("aside's process is still in the pod's network namespace %s: the test proves nothing", pinned)
	}

	// web restarts: a new process, a new pid.
	oldPID := d.taskPID(containerID(p, "web"))
	if _, errOut, err := d.cli("restart", "pf", "-c", "web"); err != nil {
		t.Fatalf("podvisor restart pf -c web: %v\n%s", err, errOut)
	}
	p = d.waitPod("pf", 60*time.Second, "web restarted and running", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "web").RestartCount >= 1
	})
	if newPID := d.taskPID(containerID(p, "web")); newPID == oldPID {
		t.Fatalf("web's pid is still %d after its restart", oldPID)
	}

	// Forward a local port to the pod's 8080 through the TLS port, as
	// kubectl port-forward does through the apiserver.
	cfg := restConfig(addr, ca, admin)
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host + "/portForward/default/pf-" + node)
	if err != nil {
		t.Fatal(err)
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u),
		[]string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	fwdErr := make(chan error, 1)
	go func() { fwdErr <- pf.ForwardPorts() }()
	defer func() { close(stop); <-fwdErr }()
	select {
	case <-ready:
	case err := <-fwdErr:
		t.Fatalf("port-forward: %v\n%s", err, d.logTail())
	case <-time.After(30 * time.Second):
		t.Fatal("port-forward not ready within 30s")
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports %v, %v", ports, err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(int(ports[0].Local)) + "/")
	if err != nil {
		t.Fatalf("GET through the port-forward: %v\n%s", err, d.logTail())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if want := "served-by-pf-" + node + "\n"; err != nil || string(body) != want {
		t.Fatalf("GET through the port-forward: %q, %v; want %q", body, err, want)
	}
}

// sandboxOf is the sandbox of pod p, from its record.
func (d *daemon) sandboxOf(p *v1.Pod) string {
	d.t.Helper()
	b, err := os.ReadFile(layout.Layout{StateDir: d.state}.RecordFile(string(p.UID)))
	if err != nil {
		d.t.Fatal(err)
	}
	var rec struct {
		Sandbox *struct {
			ID string `json:"id"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Sandbox == nil || rec.Sandbox.ID == "" {
		d.t.Fatalf("record of %s names no sandbox (%v): %s", p.Name, err, b)
	}
	return rec.Sandbox.ID
}

// nsInode is the inode of a namespace file, which names the namespace.
func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return st.Ino
}
