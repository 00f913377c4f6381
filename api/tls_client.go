package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// dialTimeout bounds a remote client's TCP connect and TLS handshake.
const dialTimeout = 10 * time.Second

// NewTLSClient returns a Client for the remote API that ListenTLS serves at
// server ("https://HOST:PORT"), authenticating with the client certificate
// certFile and its key keyFile, and trusting the server certificates that
// chain to the CAs in caFile (the system's CAs when caFile is empty).
func NewTLSClient(server, certFile, keyFile, caFile string) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("--server %q: want https://HOST:PORT", server)
	}
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("--server %s needs --client-certificate and --client-key: podvisor's remote API takes no anonymous clients", server)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--client-certificate %s, --client-key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if caFile != "" {
		if cfg.RootCAs, err = loadCAs(caFile, "--certificate-authority"); err != nil {
			return nil, err
		}
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: dialTimeout}
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, &unreachableError{path: server, err: err}
			}
			return conn, nil
		},
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: dialTimeout,
		// Streams (logs -f, watches) send their headers at once too.
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConns:          2,
	}
	return &Client{socketPath: server, http: &http.Client{Transport: tr}, scheme: "https", host: host}, nil
}
