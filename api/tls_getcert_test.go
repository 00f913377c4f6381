package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"testing"

	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/test/testcerts"
)

// With GetCertificate (a certificate issued through the apiserver) the
// server needs no certificate files: each handshake serves what it
// returns, and its error refuses the handshake.
func TestTLSGetCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcerts.NewCA(dir, "podvisor")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client(dir, "admin")
	if err != nil {
		t.Fatal(err)
	}
	var current atomic.Pointer[tls.Certificate]
	issue := func() string {
		t.Helper()
		p, err := ca.Server(dir, "server", net.IPv4(127, 0, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		current.Store(&pair)
		return p.Serial.String()
	}
	tc := TLSConfig{Address: "127.0.0.1:0", ClientCAFile: ca.CertFile, Filter: noFilter, GetCertificate: func() (*tls.Certificate, error) {
		if c := current.Load(); c != nil {
			return c, nil
		}
		return nil, errors.New("no serving certificate yet")
	}}
	if err := tc.Validate(); err != nil {
		t.Fatalf("Validate without certificate files: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := ListenTLS(ctx, Options{Store: status.NewStore(slog.New(slog.DiscardHandler))}, tc)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-errc })

	roots := x509.NewCertPool()
	b, _ := os.ReadFile(ca.CertFile)
	roots.AppendCertsFromPEM(b)
	cc, err := tls.LoadX509KeyPair(client.CertFile, client.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() (string, error) {
		conn, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cc}})
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}
	if _, err := serial(); err == nil {
		t.Fatal("handshake succeeded without a certificate")
	}
	for range 2 {
		want := issue()
		if got, err := serial(); err != nil || got != want {
			t.Fatalf("served %s (%v), want the current %s", got, err, want)
		}
	}
}
