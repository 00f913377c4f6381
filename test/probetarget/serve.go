package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// tcpPoll is how often the TCP listener reads the state file.
const tcpPoll = 50 * time.Millisecond

// target is a running probetarget.
type target struct {
	statePath string
	stop      chan struct{} // closed by close: hanging answers end
	wg        sync.WaitGroup

	mu     sync.Mutex // serialises stdout and stderr lines
	stdout io.Writer
	stderr io.Writer

	// addrs are the listeners' addresses by endpoint name.
	addrs      map[string]string
	httpSrv    *http.Server
	httpsSrv   *http.Server
	grpcSrv    *grpc.Server
	tcpStopped chan struct{} // closed when the TCP loop has ended
}

// endpoints in the order the listening line names them.
var endpoints = []string{"http", "https", "tcp", "grpc"}

// start opens every listener cfg asks for and serves them. On error
// nothing is left open.
func start(cfg config, stdout, stderr io.Writer) (_ *target, err error) {
	t := &target{
		statePath: cfg.statePath,
		stop:      make(chan struct{}),
		stdout:    stdout,
		stderr:    stderr,
		addrs:     map[string]string{},
	}
	ports := map[string]int{"http": cfg.httpPort, "https": cfg.httpsPort, "tcp": cfg.tcpPort, "grpc": cfg.grpcPort}
	lns := map[string]net.Listener{}
	defer func() {
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
		}
	}()
	for _, e := range endpoints {
		if ports[e] < 0 {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.addr, strconv.Itoa(ports[e])))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e, err)
		}
		lns[e] = ln
		t.addrs[e] = ln.Addr().String()
	}
	var cert tls.Certificate
	if lns["https"] != nil {
		if cert, err = selfSigned(); err != nil {
			return nil, fmt.Errorf("https: %w", err)
		}
	}

	if ln := lns["http"]; ln != nil {
		t.httpSrv = t.newHTTPServer("http")
		t.serve(func() error { return t.httpSrv.Serve(ln) })
	}
	if ln := lns["https"]; ln != nil {
		t.httpsSrv = t.newHTTPServer("https")
		t.httpsSrv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		t.serve(func() error { return t.httpsSrv.ServeTLS(ln, "", "") })
	}
	if ln := lns["grpc"]; ln != nil {
		t.grpcSrv = grpc.NewServer()
		healthpb.RegisterHealthServer(t.grpcSrv, &health{t: t})
		t.serve(func() error { return t.grpcSrv.Serve(ln) })
	}
	if ln := lns["tcp"]; ln != nil {
		t.tcpStopped = make(chan struct{})
		s, _ := readState(t.statePath) // the loop reports errors
		if !s.tcpOpen() {
			ln.Close()
			ln = nil
		}
		go t.tcpLoop(ln, t.addrs["tcp"])
	}
	return t, nil
}

// serve runs a server's Serve in a goroutine close waits for.
func (t *target) serve(fn func() error) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
			t.errorf("serve: %v", err)
		}
	}()
}

// close stops every listener and answer and returns when they have ended.
// Connections close before hanging answers end, so none of those gets a
// reply.
func (t *target) close() {
	for _, s := range []*http.Server{t.httpSrv, t.httpsSrv} {
		if s != nil {
			s.Close()
		}
	}
	if t.grpcSrv != nil {
		t.grpcSrv.Stop()
	}
	close(t.stop)
	if t.tcpStopped != nil {
		<-t.tcpStopped
	}
	t.wg.Wait()
}

// listening names the listeners' addresses: "http=[::]:8080 ...".
func (t *target) listening() string {
	var parts []string
	for _, e := range endpoints {
		if a, ok := t.addrs[e]; ok {
			parts = append(parts, e+"="+a)
		}
	}
	return strings.Join(parts, " ")
}

func (t *target) logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.stdout, format+"\n", args...)
}

func (t *target) errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.stderr, "probetarget: "+format+"\n", args...)
}

// state reads the state file, reporting lines it ignores.
func (t *target) state() state {
	s, errs := readState(t.statePath)
	for _, err := range errs {
		t.errorf("state: %v", err)
	}
	return s
}

// wait blocks for d (forever when d < 0) or until ctx or the target
// ends.
func (t *target) wait(ctx context.Context, d time.Duration) {
	var timer <-chan time.Time
	if d >= 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		timer = tm.C
	}
	select {
	case <-timer:
	case <-ctx.Done():
	case <-t.stop:
	}
}

func (t *target) newHTTPServer(endpoint string) *http.Server {
	return &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.answerHTTP(endpoint, w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
}

func (t *target) answerHTTP(endpoint string, w http.ResponseWriter, r *http.Request) {
	a := t.state().http(endpoint, r.URL.Path)
	t.logf("%s %s %s -> %s proto=%s remote=%s %s", endpoint, r.Method, r.RequestURI, a, r.Proto, r.RemoteAddr, headerLine(r))
	if a.hang {
		t.wait(r.Context(), -1)
		return
	}
	if a.delay > 0 {
		t.wait(r.Context(), a.delay)
	}
	if a.location != "" {
		w.Header().Set("Location", a.location)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(a.code)
	if r.URL.Path == "/headers" {
		io.WriteString(w, headerBody(r))
		return
	}
	fmt.Fprintf(w, "%d %s\n", a.code, http.StatusText(a.code))
}

// headerNames returns r's header names, sorted.
func headerNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// headerLine is r's headers for the request log: Host="..." Name="v1, v2".
func headerLine(r *http.Request) string {
	parts := []string{"Host=" + strconv.Quote(r.Host)}
	for _, k := range headerNames(r.Header) {
		parts = append(parts, k+"="+strconv.Quote(strings.Join(r.Header[k], ", ")))
	}
	return strings.Join(parts, " ")
}

// headerBody is r's headers for /headers: "Name: value" lines, Host first.
func headerBody(r *http.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Host: %s\n", r.Host)
	for _, k := range headerNames(r.Header) {
		for _, v := range r.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	return b.String()
}

// tcpLoop keeps the TCP listener as the state file says, on addr (the
// port chosen at start), until the target stops. ln is the open listener
// or nil.
func (t *target) tcpLoop(ln net.Listener, addr string) {
	defer close(t.tcpStopped)
	var accepting sync.WaitGroup
	accept := func(ln net.Listener) {
		accepting.Add(1)
		go func() {
			defer accepting.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				t.logf("tcp connect remote=%s", c.RemoteAddr())
				c.Close()
			}
		}()
	}
	if ln != nil {
		accept(ln)
	}
	tick := time.NewTicker(tcpPoll)
	defer tick.Stop()
	var lastErr string
	for {
		select {
		case <-t.stop:
			if ln != nil {
				ln.Close()
			}
			accepting.Wait()
			return
		case <-tick.C:
		}
		s, errs := readState(t.statePath)
		if msg := fmt.Sprint(errs); len(errs) > 0 && msg != lastErr {
			t.errorf("state: %s", msg) // once per change, not every tick
			lastErr = msg
		}
		switch open := s.tcpOpen(); {
		case open && ln == nil:
			var err error
			if ln, err = net.Listen("tcp", addr); err != nil {
				if msg := err.Error(); msg != lastErr {
					t.errorf("tcp: %v", err)
					lastErr = msg
				}
				ln = nil
				continue
			}
			accept(ln)
		case !open && ln != nil:
			ln.Close()
			ln = nil
		}
	}
}

// health is the grpc.health.v1.Health service, answering from the state
// file.
type health struct {
	healthpb.UnimplementedHealthServer
	t *target
}

func (h *health) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	a := h.t.state().grpc(req.GetService())
	remote := ""
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	h.t.logf("grpc Check service=%q -> %s remote=%s %s", req.GetService(), a, remote, metadataLine(ctx))
	switch {
	case a.hang:
		h.t.wait(ctx, -1)
		return nil, status.Error(codes.Unavailable, "probetarget: hang ended")
	case a.notFound:
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &healthpb.HealthCheckResponse{Status: a.status}, nil
}

// metadataLine is the request's metadata for the request log.
func metadataLine(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(strings.Join(md[k], ", ")))
	}
	return strings.Join(parts, " ")
}

// selfSigned makes the HTTPS certificate: ECDSA P-256, valid from an hour
// ago for ten years, for localhost, the loopback addresses and the host
// name.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	dns := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		dns = append(dns, h)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "probetarget"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dns,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
