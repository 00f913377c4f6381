package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/test/testcerts"
	v1 "k8s.io/api/core/v1"
)

func netIP(s string) net.IP { return net.ParseIP(s) }

// tlsPort makes a CA called caName in d's directory and, from it, a
// server certificate for 127.0.0.1; picks a free port; and adds to d's
// arguments the flags that serve the TLS port there with that CA as the
// client CA. It returns the port's address and the CA.
func tlsPort(t *testing.T, d *daemon, caName string) (string, *testcerts.CA) {
	t.Helper()
	ca, err := testcerts.NewCA(d.dir, caName)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Server(d.dir, caName+"-server", net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	d.extraArgs = append(d.extraArgs, "--tls-bind-address", addr,
		"--tls-cert-file", server.CertFile, "--tls-private-key-file", server.KeyFile, "--client-ca-file", ca.CertFile)
	return addr, ca
}

// tlsClient is a client of the TLS port at addr with a certificate from
// ca, written to d's directory, for user in groups; the certificate is
// returned too.
func tlsClient(t *testing.T, d *daemon, addr string, ca *testcerts.CA, user string, groups ...string) (*api.Client, *testcerts.Pair) {
	t.Helper()
	p, err := ca.ClientInGroups(d.dir, user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := api.NewTLSClient("https://"+addr, p.CertFile, p.KeyFile, ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// hostDir makes a directory under the daemon's own directory for a pod's
// hostPath volume: the test writes state files into it and reads what the
// containers wrote.
func (d *daemon) hostDir(name string) string {
	d.t.Helper()
	p := filepath.Join(d.dir, "host", name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		d.t.Fatal(err)
	}
	return p
}

// writeAtomic replaces path by rename, so no reader (probetarget reading
// its state file) sees half of it.
func (d *daemon) writeAtomic(path, content string) {
	d.t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		d.t.Fatal(err)
	}
}

// logLines is what one run of a container wrote to its CRI log, a line an
// entry (nil while there is no log yet).
func (d *daemon) logLines(p *v1.Pod, container string, restart int32) []string {
	path := filepath.Join(d.logs, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), container, fmt.Sprintf("%d.log", restart))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		if r, err := crilog.Parse(line); err == nil {
			out = append(out, string(r.Content))
		}
	}
	return out
}

// countLines counts the lines holding every word.
func countLines(lines []string, words ...string) int {
	n := 0
	for _, l := range lines {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			n++
		}
	}
	return n
}

// fileLines reads a file a container appends lines to.
func fileLines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

// hold checks cond every 100ms for dur and fails the test as soon as it
// does not hold: what must stay true over a while (no restart, still
// Ready) rather than what must become true.
func (d *daemon) hold(what string, dur time.Duration, cond func() (bool, string)) {
	d.t.Helper()
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			d.t.Fatalf("%s stopped holding after %s: %s", what, dur-time.Until(deadline), msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventCount adds up the counts of the pod's events with reason whose
// message holds substr, and returns the messages it saw with that reason.
func (d *daemon) eventCount(pod, reason, substr string) (int, []string) {
	n := 0
	var msgs []string
	for _, e := range d.podEvents(pod) {
		if e.Reason != reason {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%s(x%d)", e.Message, e.Count))
		if strings.Contains(e.Message, substr) {
			n += int(e.Count)
		}
	}
	return n, msgs
}

// containerReady reports whether the container called name (app or init)
// is ready.
func containerReady(p *v1.Pod, name string) bool {
	for _, cs := range append(append([]v1.ContainerStatus(nil), p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...) {
		if cs.Name == name {
			return cs.Ready
		}
	}
	return false
}

// started reports whether a container status says started.
func started(cs v1.ContainerStatus) bool { return cs.Started != nil && *cs.Started }

// podReady reports whether the pod's Ready and ContainersReady conditions
// are both True.
func podReady(p *v1.Pod) bool {
	return conditionStatus(p, v1.PodReady) == v1.ConditionTrue && conditionStatus(p, v1.ContainersReady) == v1.ConditionTrue
}

// podNotReady reports whether both are False.
func podNotReady(p *v1.Pod) bool {
	return conditionStatus(p, v1.PodReady) == v1.ConditionFalse && conditionStatus(p, v1.ContainersReady) == v1.ConditionFalse
}

// pidsInNamespace lists the host pids of the processes in the PID
// namespace of pid whose command line is exactly args.
func pidsInNamespace(pid uint32, args ...string) []string {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return nil
	}
	want := strings.Join(args, "\x00") + "\x00"
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if l, err := os.Readlink(filepath.Join("/proc", p.Name(), "ns", "pid")); err != nil || l != ns {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline")); err == nil && string(b) == want {
			out = append(out, p.Name())
		}
	}
	return out
}
