package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/test/syncbuf"
	"github.com/podvisor/podvisor/test/testcerts"
)

type tlsFixture struct {
	ca, otherCA   *testcerts.CA
	server        *testcerts.Pair
	client, rogue *testcerts.Pair
	addr, dir     string
}

// noFilter lets everything through, recording nothing.
func noFilter(h http.Handler) http.Handler { return h }

func startTLS(t *testing.T) *tlsFixture {
	t.Helper()
	return startTLSWith(t, noFilter, false)
}

func startTLSWith(t *testing.T, filter func(http.Handler) http.Handler, tokens bool) *tlsFixture {
	t.Helper()
	dir := t.TempDir()
	f := &tlsFixture{dir: dir}
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f.ca, err = testcerts.NewCA(dir, "podvisor")
	must(err)
	f.otherCA, err = testcerts.NewCA(dir, "other")
	must(err)
	f.server, err = f.ca.Server(dir, "server", net.IPv4(127, 0, 0, 1))
	must(err)
	f.client, err = f.ca.Client(dir, "admin")
	must(err)
	f.rogue, err = f.otherCA.Client(dir, "rogue")
	must(err)

	s := status.NewStore(slog.New(slog.DiscardHandler))
	s.SetPod(staticPod("default", "web", "node1"))
	f.addr = serveTLS(t, Options{Store: s}, TLSConfig{
		Address: "127.0.0.1:0", CertFile: f.server.CertFile, KeyFile: f.server.KeyFile, ClientCAFile: f.ca.CertFile,
		Filter: filter, ClientTokens: tokens,
	})
	return f
}

// serveTLS serves a TLS port with o and cfg until the test ends, and
// returns its address.
func serveTLS(t *testing.T, o Options, cfg TLSConfig) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := ListenTLS(ctx, o, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-errc })
	return srv.Addr().String()
}

func TestTLSClientCertificates(t *testing.T) {
	f := startTLS(t)
	ctx := t.Context()

	c, err := NewTLSClient("https://"+f.addr, f.client.CertFile, f.client.KeyFile, f.ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.Pods(ctx)
	if err != nil {
		t.Fatalf("good client: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "web-node1" {
		t.Fatalf("pods = %+v", list.Items)
	}

	roots := x509.NewCertPool()
	b, _ := os.ReadFile(f.ca.CertFile)
	roots.AppendCertsFromPEM(b)
	rogue, err := tls.LoadX509KeyPair(f.rogue.CertFile, f.rogue.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		max   uint16
	}{
		{"no certificate, TLS 1.3", nil, tls.VersionTLS13},
		{"no certificate, TLS 1.2", nil, tls.VersionTLS12},
		{"certificate from another CA", []tls.Certificate{rogue}, tls.VersionTLS13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs: roots, Certificates: tc.certs, MaxVersion: tc.max,
			}}}
			resp, err := hc.Get("https://" + f.addr + "/pods")
			if err == nil {
				resp.Body.Close()
				t.Fatalf("answered %s", resp.Status)
			}
			if !strings.Contains(err.Error(), "tls") {
				t.Fatalf("err = %v, want a TLS failure", err)
			}
		})
	}

	t.Run("TLS 1.1 refused", func(t *testing.T) {
		conn, err := tls.Dial("tcp", f.addr, &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS11})
		if err == nil {
			conn.Close()
			t.Fatal("TLS 1.1 handshake succeeded")
		}
	})
}

// A renewed server certificate is used from the next handshake on.
func TestTLSReloadsCertificate(t *testing.T) {
	f := startTLS(t)
	roots := x509.NewCertPool()
	b, _ := os.ReadFile(f.ca.CertFile)
	roots.AppendCertsFromPEM(b)
	client, err := tls.LoadX509KeyPair(f.client.CertFile, f.client.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", f.addr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := serial(); got != f.server.Serial.String() {
		t.Fatalf("serial %s, want %s", got, f.server.Serial)
	}
	renewed, err := f.ca.Server(f.dir, "server", net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != renewed.Serial.String() {
		t.Fatalf("serial %s after renewal, want the new %s", got, renewed.Serial)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	s := status.NewStore(slog.New(slog.DiscardHandler))
	_, err := ListenTLS(t.Context(), Options{Store: s}, TLSConfig{Address: "127.0.0.1:0", CertFile: "/x"})
	if err == nil || !strings.Contains(err.Error(), "--tls-private-key-file") || !strings.Contains(err.Error(), "--client-ca-file") {
		t.Fatalf("err = %v, want the missing flags named", err)
	}
	dir := t.TempDir()
	ca, err := testcerts.NewCA(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server(dir, "server", net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ListenTLS(t.Context(), Options{Store: s}, TLSConfig{Address: "127.0.0.1:0", CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: srv.KeyFile, Filter: noFilter})
	if err == nil || !strings.Contains(err.Error(), "--client-ca-file") {
		t.Fatalf("err = %v, want --client-ca-file named", err)
	}
	_, err = ListenTLS(t.Context(), Options{Store: s}, TLSConfig{Address: "127.0.0.1:0", CertFile: srv.CertFile, KeyFile: ca.CertFile, ClientCAFile: ca.CertFile, Filter: noFilter})
	if err == nil || !strings.Contains(err.Error(), "--tls-private-key-file") {
		t.Fatalf("err = %v, want --tls-private-key-file named", err)
	}

	_, err = ListenTLS(t.Context(), Options{Store: s}, TLSConfig{Address: "127.0.0.1:0", CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile})
	if err == nil || !strings.Contains(err.Error(), "no authorization filter") {
		t.Fatalf("no filter: err = %v, want a refusal", err)
	}

	for _, server := range []string{"http://127.0.0.1:1", "127.0.0.1:1", "https://"} {
		if _, err := NewTLSClient(server, srv.CertFile, srv.KeyFile, ""); err == nil || !strings.Contains(err.Error(), "https://HOST:PORT") {
			t.Errorf("NewTLSClient(%q): err = %v", server, err)
		}
	}
	if _, err := NewTLSClient("https://127.0.0.1:1", "", "", ""); err == nil || !strings.Contains(err.Error(), "--client-certificate") {
		t.Errorf("no client certificate: err = %v", err)
	}
	c, err := NewTLSClient("https://127.0.0.1:1", srv.CertFile, srv.KeyFile, ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pods(t.Context()); !errors.Is(err, ErrUnreachable) {
		t.Errorf("nothing listening: err = %v, want ErrUnreachable", err)
	}
}

// The filter is in front of every path served over TLS, and with
// ClientTokens a client without a certificate reaches it (to present a
// token) while one with a certificate from another CA still fails the
// handshake.
func TestTLSFilterAndTokens(t *testing.T) {
	var seen []string
	filter := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, r.URL.Path)
			if r.Header.Get("Authorization") != "Bearer good" {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	f := startTLSWith(t, filter, true)
	roots := x509.NewCertPool()
	b, _ := os.ReadFile(f.ca.CertFile)
	roots.AppendCertsFromPEM(b)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/pods", "", http.StatusUnauthorized},
		{"/debug/pprof/", "", http.StatusUnauthorized},
		{"/version", "good", http.StatusOK},
		{"/healthz", "good", http.StatusOK},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "https://"+f.addr+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %s, want %d", tc.path, resp.Status, tc.want)
		}
	}
	if want := []string{"/pods", "/debug/pprof/", "/version", "/healthz"}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("the filter saw %q, want %q", seen, want)
	}
	rogue, err := tls.LoadX509KeyPair(f.rogue.CertFile, f.rogue.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	// Sent even though the server names its CA (Go's client would not).
	send := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &rogue, nil }
	hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, GetClientCertificate: send}}}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "https://"+f.addr+"/version", nil)
	req.Header.Set("Authorization", "Bearer good")
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate from another CA passed the handshake: %s", resp.Status)
	}
}

// A client CA that LoadClientCA refuses is refused at start, and when
// the file is changed to it later the previous CA stays in use (its
// clients still connect, the new CA's do not) and the log says why; a
// change LoadClientCA accepts is used from the next handshake.
func TestTLSRefusedClientCAReloadKeepsPrevious(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ca, err := testcerts.NewCA(dir, "podvisor")
	must(err)
	forbidden, err := testcerts.NewCA(dir, "cluster")
	must(err)
	third, err := testcerts.NewCA(dir, "third")
	must(err)
	server, err := ca.Server(dir, "server", net.IPv4(127, 0, 0, 1))
	must(err)
	good, err := ca.Client(dir, "admin")
	must(err)
	rogue, err := forbidden.Client(dir, "node")
	must(err)
	later, err := third.Client(dir, "later")
	must(err)
	forbiddenPEM, err := os.ReadFile(forbidden.CertFile)
	must(err)
	refuse := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, forbiddenPEM) {
			err = fmt.Errorf("--client-ca-file %s: holds the cluster CA", path)
		}
		return b, err
	}
	clientCA := filepath.Join(dir, "clients.crt")
	put := func(src string) {
		t.Helper()
		b, err := os.ReadFile(src)
		must(err)
		must(os.WriteFile(clientCA+".tmp", b, 0o644))
		must(os.Rename(clientCA+".tmp", clientCA))
	}
	var logs syncbuf.Buffer
	s := status.NewStore(slog.New(slog.DiscardHandler))
	cfg := TLSConfig{Address: "127.0.0.1:0", CertFile: server.CertFile, KeyFile: server.KeyFile, ClientCAFile: clientCA, Filter: noFilter, LoadClientCA: refuse}
	o := Options{Store: s, Log: slog.New(slog.NewTextHandler(&logs, nil))}

	put(forbidden.CertFile)
	if _, err := ListenTLS(t.Context(), o, cfg); err == nil || !strings.Contains(err.Error(), "--client-ca-file") || !strings.Contains(err.Error(), "holds the cluster CA") {
		t.Fatalf("start with a refused client CA: %v", err)
	}

	put(ca.CertFile)
	addr := serveTLS(t, o, cfg)
	roots := x509.NewCertPool()
	b, _ := os.ReadFile(ca.CertFile)
	roots.AppendCertsFromPEM(b)
	dial := func(p *testcerts.Pair) error {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
		must(err)
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MaxVersion: tls.VersionTLS12})
		if err != nil {
			return err
		}
		return conn.Close()
	}
	if err := dial(good); err != nil {
		t.Fatalf("client of the CA: %v", err)
	}
	put(forbidden.CertFile)
	for range 3 {
		if err := dial(good); err != nil {
			t.Fatalf("client of the previous CA after a refused reload: %v\n%s", err, logs.String())
		}
		if err := dial(rogue); err == nil {
			t.Fatal("client of the refused CA connected")
		}
	}
	if n := strings.Count(logs.String(), "refusing the changed --client-ca-file"); n != 1 || !strings.Contains(logs.String(), "holds the cluster CA") {
		t.Errorf("log said the refusal %d times, want once with why:\n%s", n, logs.String())
	}
	put(third.CertFile)
	if err := dial(later); err != nil {
		t.Fatalf("client of an accepted new CA: %v\n%s", err, logs.String())
	}
	if err := dial(good); err == nil {
		t.Error("client of the replaced CA still connects")
	}
}
