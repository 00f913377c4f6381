package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/testcerts"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// The TLS port's caps, as api's tlsSessions, tlsWatches and
// tlsWatchesPerClient state them.
const (
	tlsSessionCap          = 64
	tlsWatchCap            = 32
	tlsWatchesPerClientCap = 8
)

// limitsPolicy lets admin create (exec, port-forward) and read, and any
// certificate of group watchers read (watch).
const limitsPolicy = `apiVersion: podvisor.io/v1alpha1
kind: AuthorizationPolicy
get:
- user: admin
- group: watchers
create:
- user: admin
`

// tlsDaemon starts d with a TLS port, its client CA ca and policy, and
// returns the port's address.
func tlsDaemon(t *testing.T, d *daemon, policy string) (string, *testcerts.CA) {
	t.Helper()
	addr, ca := tlsPort(t, d, "podvisor")
	policyFile := filepath.Join(d.dir, "policy.yaml")
	writeFile(t, policyFile, policy)
	d.extraArgs = append(d.extraArgs, "--authorization-policy-file", policyFile)
	d.start()
	return addr, ca
}

// restConfig is client-go's configuration for the TLS port at addr with
// p's certificate.
func restConfig(addr string, ca *testcerts.CA, p *testcerts.Pair) *rest.Config {
	return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{CertFile: p.CertFile, KeyFile: p.KeyFile, CAFile: ca.CertFile}}
}

// dialPortForward opens a port-forward session of pod on the TLS port (a
// SPDY connection that holds one of the port's sessions until closed),
// as kubectl port-forward does before its first connection.
func dialPortForward(cfg *rest.Config, pod string) (httpstream.Connection, error) {
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Host + "/portForward/default/" + pod)
	if err != nil {
		return nil, err
	}
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: rt, Timeout: 30 * time.Second}, http.MethodPost, u).Dial(portforward.PortForwardProtocolV1Name)
	return conn, err
}

// lineWriter signals on seen when the output holds want.
type lineWriter struct {
	want string
	buf  strings.Builder
	seen chan struct{}
	done bool
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		close(w.seen)
	}
	return len(b), nil
}

// TestRemoteSessionsLeaveRootsSocket: a remote client that fills the TLS
// port's exec, attach and port-forward sessions (some long execs, the
// rest port-forwards) gets 429 naming the TLS port's limit, and root's
// `podvisor exec` on the socket still works; watches beyond the cap of
// one user, and beyond the port's total, get 429 naming the cap, while
// another user and root's socket still watch.
func TestRemoteSessionsLeaveRootsSocket(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	d.writeManifest("hold.yaml", fmt.Sprintf(hostnamePod, "hold"))
	addr, ca := tlsDaemon(t, d, limitsPolicy)
	d.waitPod("hold", 60*time.Second, "running", running)
	pod := "hold-" + node
	remote, admin := tlsClient(t, d, addr, ca, "admin")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	// Long exec sessions, each known to hold its slot once it printed.
	const execs = 4
	execDone := make(chan error, execs)
	for range execs {
		w := &lineWriter{want: "holding", seen: make(chan struct{})}
		go func() {
			execDone <- remote.Exec(ctx, "default/"+pod, []string{"sh", "-c", "echo holding; exec sleep 3600"}, api.StreamOptions{Container: "main", Stdout: w, Stderr: io.Discard})
		}()
		select {
		case <-w.seen:
		case err := <-execDone:
			t.Fatalf("a remote exec ended before it held its session: %v\n%s", err, d.logTail())
		case <-time.After(60 * time.Second):
			t.Fatalf("a remote exec did not start within 60s\n%s", d.logTail())
		}
	}
	// The rest of the port's sessions: port-forwards with no connection.
	cfg := restConfig(addr, ca, admin)
	for i := execs; i < tlsSessionCap; i++ {
		conn, err := dialPortForward(cfg, pod)
		if err != nil {
			t.Fatalf("remote port-forward session %d of %d: %v\n%s", i+1, tlsSessionCap, err, d.logTail())
		}
		defer conn.Close()
	}

	// Root's socket is untouched: podvisor exec works.
	out, errOut, code := d.runCLI("", "exec", "hold", "--", "sh", "-c", "echo root-still-execs")
	if code != 0 || out != "root-still-execs\n" {
		t.Fatalf("podvisor exec on the socket with the TLS port full: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// The TLS port is full: its next session is refused, naming it.
	want := fmt.Sprintf("too many exec, attach and port-forward sessions: %d are open on this podvisor's TLS port", tlsSessionCap)
	ectx, ecancel := context.WithTimeout(ctx, 30*time.Second)
	err := remote.Exec(ectx, "default/"+pod, []string{"true"}, api.StreamOptions{Container: "main", Stdout: io.Discard, Stderr: io.Discard})
	ecancel()
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Code != http.StatusTooManyRequests || !strings.Contains(ae.Message, want) {
		t.Fatalf("a remote exec with the TLS port's sessions full: %v, want 429 %q", err, want)
	}
	if conn, err := dialPortForward(cfg, pod); err == nil {
		conn.Close()
		t.Fatal("a remote port-forward with the TLS port's sessions full was served")
	} else if !strings.Contains(err.Error(), "429") && !strings.Contains(err.Error(), "too many") {
		t.Fatalf("a remote port-forward with the TLS port's sessions full: %v, want 429", err)
	}

	t.Run("watches", func(t *testing.T) {
		base := "https://" + addr
		user := func(name string) *http.Client {
			t.Helper()
			cert := clientCert(t, ca, name, "watchers")
			return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool(t, ca), Certificates: []tls.Certificate{cert}}}}
		}
		watch := func(hc *http.Client, base, path string) (int, string) {
			t.Helper()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?watch=true", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("GET %s?watch=true: %v", path, err)
			}
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(func() { resp.Body.Close() })
				return resp.StatusCode, ""
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return resp.StatusCode, string(b)
		}
		users := tlsWatchCap / tlsWatchesPerClientCap
		for i := range users {
			name := fmt.Sprintf("watcher%d", i)
			hc := user(name)
			for j := range tlsWatchesPerClientCap {
				path := []string{"/pods", "/events"}[j%2]
				if code, body := watch(hc, base, path); code != http.StatusOK {
					t.Fatalf("watch %d of %s: %d %s", j+1, name, code, body)
				}
			}
			if i == 0 {
				code, body := watch(hc, base, "/pods")
				want := fmt.Sprintf(`too many watches for user \"%s\": %d are open, the most for one client on this podvisor's TLS port`, name, tlsWatchesPerClientCap)
				if code != http.StatusTooManyRequests || !strings.Contains(body, want) || !strings.Contains(body, `"kind":"Status"`) {
					t.Fatalf("a watch beyond one user's cap: %d %s, want 429 with %s", code, body, want)
				}
			}
		}
		code, body := watch(user("latecomer"), base, "/pods")
		want := fmt.Sprintf("too many watches: %d are open on this podvisor's TLS port", tlsWatchCap)
		if code != http.StatusTooManyRequests || !strings.Contains(body, want) {
			t.Fatalf("a watch beyond the TLS port's total: %d %s, want 429 with %s", code, body, want)
		}
		// Root's watches on the socket are counted apart.
		sock := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.sock)
		}}}
		if code, body := watch(sock, "http://podvisor", "/pods"); code != http.StatusOK {
			t.Fatalf("root's watch on the socket with the TLS port's full: %d %s", code, body)
		}
	})
}

// caPool is a pool of ca's certificate.
func caPool(t *testing.T, ca *testcerts.CA) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	return pool
}
