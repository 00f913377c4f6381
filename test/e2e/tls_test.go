package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/testcerts"
	v1 "k8s.io/api/core/v1"
)

// freePort is a loopback TCP port nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The remote API answers a client with a certificate from the client CA,
// through the Go client and through `podvisor --server`, and refuses one
// with no certificate or one from another CA at the handshake.
func TestTLSListener(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ca, err := testcerts.NewCA(d.dir, "podvisor")
	must(err)
	other, err := testcerts.NewCA(d.dir, "other")
	must(err)
	server, err := ca.Server(d.dir, "server", net.IPv4(127, 0, 0, 1))
	must(err)
	admin, err := ca.Client(d.dir, "admin")
	must(err)
	rogue, err := other.Client(d.dir, "rogue")
	must(err)

	// Asked for without its files: podvisor does not start, and says why.
	out, err := exec.Command(podvisorBin, "run", "--tls-bind-address", "127.0.0.1:1", "--tls-cert-file", server.CertFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs --tls-private-key-file and --client-ca-file") {
		t.Errorf("run without key and CA: %v\n%s", err, out)
	}

	addr := freePort(t)
	d.extraArgs = append(d.extraArgs, "--tls-bind-address", addr,
		"--tls-cert-file", server.CertFile, "--tls-private-key-file", server.KeyFile, "--client-ca-file", ca.CertFile)
	d.extraArgs = append(d.extraArgs, tlsPolicyArgs(t, d)...)
	d.writeManifest("remote.yaml", fmt.Sprintf(hostnamePod, "remote"))
	d.start()
	d.waitPod("remote", 60*time.Second, "running", func(p *v1.Pod) bool { return running(p) })

	url := "https://" + addr
	c, err := api.NewTLSClient(url, admin.CertFile, admin.KeyFile, ca.CertFile)
	must(err)
	list, err := c.Pods(context.Background())
	if err != nil {
		t.Fatalf("GET /pods with a good certificate: %v\n%s", err, d.logTail())
	}
	if len(list.Items) != 1 || list.Items[0].Name != "remote-"+node {
		t.Fatalf("GET /pods: %d pods, want remote-%s", len(list.Items), node)
	}

	roots := x509.NewCertPool()
	b, err := os.ReadFile(ca.CertFile)
	must(err)
	roots.AppendCertsFromPEM(b)
	rogueCert, err := tls.LoadX509KeyPair(rogue.CertFile, rogue.KeyFile)
	must(err)
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
	}{{"no certificate", nil}, {"certificate from another CA", []tls.Certificate{rogueCert}}} {
		// The handshake itself fails: TLS 1.2 ends it before any request.
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: roots, Certificates: tc.certs, MaxVersion: tls.VersionTLS12})
		if err == nil {
			conn.Close()
			t.Errorf("%s: TLS 1.2 handshake succeeded", tc.name)
		}
		// TLS 1.3 (the client's handshake ends first): no answer either.
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: tc.certs}}}
		resp, err := hc.Get(url + "/pods")
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: GET /pods answered %s", tc.name, resp.Status)
		} else if !strings.Contains(err.Error(), "tls") {
			t.Errorf("%s: GET /pods: %v, want a TLS error", tc.name, err)
		}
	}

	// The CLI, with the flags before the command and after it.
	flags := []string{"--server", url, "--client-certificate", admin.CertFile, "--client-key", admin.KeyFile, "--certificate-authority", ca.CertFile}
	for _, args := range [][]string{
		append(append([]string{}, flags...), "get", "pods"),
		append([]string{"get", "pods", "remote"}, flags...),
		append([]string{"describe", "pod", "remote"}, flags...),
	} {
		cmd := exec.Command(podvisorBin, args...)
		cmd.Env = append(os.Environ(), "PODVISOR_SOCKET=/nonexistent") // the socket is not how it gets there
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "remote-"+node) {
			t.Errorf("podvisor %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bad := []string{"--server", url, "--client-certificate", rogue.CertFile, "--client-key", rogue.KeyFile, "--certificate-authority", ca.CertFile, "get", "pods"}
	if out, err := exec.Command(podvisorBin, bad...).CombinedOutput(); err == nil || strings.Contains(string(out), "remote-"+node) {
		t.Errorf("podvisor get pods with another CA's certificate: %v\n%s", err, out)
	}
	t.Run("Policy", func(t *testing.T) { checkTLSPolicy(t, d, addr, ca) })
}
