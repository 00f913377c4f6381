package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/test/testcerts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSessionLimit: exec and attach sessions beyond the socket's limit
// are refused with a 429-style error naming the limit; once a session
// ends, a new one is served.
func TestSessionLimit(t *testing.T) {
	saved := socketLimits
	socketLimits.sessions = 1
	defer func() { socketLimits = saved }()
	hold := make(chan struct{})
	started := make(chan struct{}, 4)
	c := serveStreams(t, fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, cmd []string, _ Session) (int, error) {
		started <- struct{}{}
		if len(cmd) > 0 && cmd[0] == "hold" {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		return 0, nil
	}})
	first := make(chan error, 1)
	go func() {
		first <- c.Exec(t.Context(), "default/web-node", []string{"hold"}, StreamOptions{Container: "app"})
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first session did not start")
	}
	err := c.Exec(t.Context(), "default/web-node", []string{"true"}, StreamOptions{Container: "app"})
	if err == nil || !strings.Contains(err.Error(), "too many exec, attach and port-forward sessions: 1 are open on this podvisor's socket; try again when one ends") {
		t.Fatalf("a session beyond the limit: %v", err)
	}
	if err := c.Attach(t.Context(), "default/web-node", StreamOptions{Container: "app"}); err == nil || !strings.Contains(err.Error(), "too many exec, attach and port-forward sessions") {
		t.Fatalf("an attach beyond the limit: %v", err)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("first session: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Exec(t.Context(), "default/web-node", []string{"true"}, StreamOptions{Container: "app"})
		if err == nil {
			break
		}
		// The first session's token goes back as its handler returns,
		// just after its client saw the end.
		if time.Now().After(deadline) {
			t.Fatalf("a session after the first ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestFollowLimit: followed logs beyond the socket's limit are refused
// with a 429-style error; a log read without follow is not limited; once
// a follow ends, a new one is served.
func TestFollowLimit(t *testing.T) {
	saved := socketLimits
	socketLimits.follows = 1
	defer func() { socketLimits = saved }()
	dir := t.TempDir()
	socket, logDir := filepath.Join(dir, "s.sock"), filepath.Join(dir, "logs")
	pod := *staticPod("default", "web", "n")
	pod.Status.ContainerStatuses = []v1.ContainerStatus{running("containerd://b", 0, "")}
	store := &podStore{}
	store.set(pod)
	live := layout.Layout{LogDir: logDir}.ContainerLog("default", pod.Name, string(pod.UID), "app", 0)
	os.MkdirAll(filepath.Dir(live), 0o755)
	os.WriteFile(live, []byte(record(2, "stdout", "one")), 0o644)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Socket: socket, Store: store, LogDir: logDir, Log: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c := NewClient(socket)
	deadline := time.Now().Add(5 * time.Second)
	for c.Healthz(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	follow := &v1.PodLogOptions{Follow: true}
	first, err := c.Logs(t.Context(), "web", follow)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(first, buf); err != nil || string(buf) != "one\n" {
		t.Fatalf("first follow read %q, %v", buf, err)
	}
	if _, err := c.Logs(t.Context(), "web", follow); err == nil || !strings.Contains(err.Error(), "too many followed logs: 1 are open on this podvisor's socket") {
		t.Fatalf("a follow beyond the limit: %v", err)
	}
	if body, err := c.Logs(t.Context(), "web", &v1.PodLogOptions{}); err != nil {
		t.Fatalf("a read without follow: %v", err)
	} else {
		body.Close()
	}
	first.Close()
	deadline = time.Now().Add(5 * time.Second)
	for {
		body, err := c.Logs(t.Context(), "web", follow)
		if err == nil {
			body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a follow after the first ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// bothListeners serves o on a unix socket and on a TLS port as Serve
// does with o.Remote (one Options, so one streams, for both handlers),
// and returns the socket's client and the address of the TLS port, its
// CA and a directory for client certificates.
func bothListeners(t *testing.T, o Options) (*Client, string, *testcerts.CA, string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcerts.NewCA(dir, "podvisor")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server(dir, "server", net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	o.Socket = filepath.Join(dir, "s.sock")
	o.Log = slog.New(slog.DiscardHandler)
	o = o.withDefaults()
	addr := serveTLS(t, o, TLSConfig{Address: "127.0.0.1:0", CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile, Filter: noFilter})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, o) }()
	t.Cleanup(func() { cancel(); <-done })
	c := NewClient(o.Socket)
	waitHealthy(t, c)
	return c, addr, ca, dir
}

// tlsUser is a client of the TLS port with a certificate for user.
func tlsUser(t *testing.T, addr string, ca *testcerts.CA, dir, user string) *Client {
	t.Helper()
	p, err := ca.Client(dir, user)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewTLSClient("https://"+addr, p.CertFile, p.KeyFile, ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSessionPoolsPerListener: the socket and the TLS port have session
// pools of their own. With the TLS port's full, root's socket still
// gets a session; and the TLS port's sessions never used the socket's
// slots (the socket still has all of its own, and no more).
func TestSessionPoolsPerListener(t *testing.T) {
	saved, savedTLS := socketLimits, tlsLimits
	socketLimits.sessions, tlsLimits.sessions = 1, 2
	defer func() { socketLimits, tlsLimits = saved, savedTLS }()
	hold := make(chan struct{})
	defer close(hold)
	started := make(chan struct{}, 8)
	sock, addr, ca, dir := bothListeners(t, Options{Store: fakeStore{pods: []v1.Pod{streamPod()}}, Streamer: fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, cmd []string, _ Session) (int, error) {
		started <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
		}
		return 0, nil
	}}})
	remote := tlsUser(t, addr, ca, dir, "admin")
	opts := StreamOptions{Container: "app", Stdout: io.Discard, Stderr: io.Discard}
	open := func(c *Client) <-chan error {
		errc := make(chan error, 1)
		go func() { errc <- c.Exec(t.Context(), "default/web-node", []string{"hold"}, opts) }()
		select {
		case <-started:
		case err := <-errc:
			t.Fatalf("a session ended before it started: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("a session did not start within 10s")
		}
		return errc
	}
	refused := func(c *Client, where string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err := c.Exec(ctx, "default/web-node", []string{"hold"}, opts)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Code != http.StatusTooManyRequests || !strings.Contains(ae.Message, "are open on this podvisor's "+where) {
			t.Fatalf("a session beyond the %s's pool: %v, want 429 naming the %s", where, err, where)
		}
	}
	// The TLS port's pool, full.
	open(remote)
	open(remote)
	refused(remote, "TLS port")
	// Root's socket still gets its session.
	open(sock)
	// Its pool is its own size, not grown by the TLS port's.
	refused(sock, "socket")
	refused(remote, "TLS port")
}

// rawWatch asks c's transport for a watch of path and returns its status
// and, when refused, its body; an accepted watch stays open until the
// test ends.
func rawWatch(t *testing.T, hc *http.Client, base, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
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
	var st metav1.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || st.Code != int32(resp.StatusCode) {
		t.Fatalf("GET %s?watch=true: %s, body %q is no Status", path, resp.Status, b)
	}
	return resp.StatusCode, st.Message
}

// socketHTTP is a plain HTTP client of the unix socket.
func socketHTTP(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
}

// tlsHTTP is a plain HTTP client of the TLS port with user's certificate.
func tlsHTTP(t *testing.T, ca *testcerts.CA, dir, user string) *http.Client {
	t.Helper()
	p, err := ca.Client(dir, user)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(b)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}}}
}

// TestWatchCaps: watches are capped per client and in all, on each
// listener apart: a user of the TLS port over its cap gets 429 naming
// it, another user still watches until the port's total is reached; the
// socket's watches are not counted with the TLS port's, and have a
// per-uid cap of their own. A watch that ends gives its place back.
func TestWatchCaps(t *testing.T) {
	saved, savedTLS := socketLimits, tlsLimits
	socketLimits.watches, socketLimits.watchesPerClient = 3, 2
	tlsLimits.watches, tlsLimits.watchesPerClient = 3, 2
	defer func() { socketLimits, tlsLimits = saved, savedTLS }()
	st := status.NewStore(nil)
	st.SetPod(staticPod("default", "web", "node"))
	sock, addr, ca, dir := bothListeners(t, Options{Store: st, Watcher: st})
	base := "https://" + addr
	admin, reader := tlsHTTP(t, ca, dir, "admin"), tlsHTTP(t, ca, dir, "reader")
	want := func(code int, msg string, wantCode int, wantMsg string) {
		t.Helper()
		if code != wantCode || !strings.Contains(msg, wantMsg) {
			t.Fatalf("watch: %d %q, want %d %q", code, msg, wantCode, wantMsg)
		}
	}
	code, msg := rawWatch(t, admin, base, "/pods")
	want(code, msg, http.StatusOK, "")
	code, msg = rawWatch(t, admin, base, "/events") // /pods and /events count together
	want(code, msg, http.StatusOK, "")
	code, msg = rawWatch(t, admin, base, "/pods")
	want(code, msg, http.StatusTooManyRequests, `too many watches for user "admin": 2 are open, the most for one client on this podvisor's TLS port; try again when one ends`)
	code, msg = rawWatch(t, reader, base, "/pods")
	want(code, msg, http.StatusOK, "")
	code, msg = rawWatch(t, reader, base, "/events")
	want(code, msg, http.StatusTooManyRequests, "too many watches: 3 are open on this podvisor's TLS port; try again when one ends")

	// The socket: its own caps, untouched by the TLS port's watches.
	uid := "uid " + strconv.Itoa(os.Geteuid())
	hc := socketHTTP(filepath.Join(dir, "s.sock"))
	for range 2 {
		code, msg = rawWatch(t, hc, "http://podvisor", "/pods")
		want(code, msg, http.StatusOK, "")
	}
	code, msg = rawWatch(t, hc, "http://podvisor", "/pods")
	want(code, msg, http.StatusTooManyRequests, "too many watches for "+uid+": 2 are open, the most for one client on this podvisor's socket")
	// Lists are not watches: never capped.
	if _, err := sock.Pods(t.Context()); err != nil {
		t.Fatalf("a list with the watches full: %v", err)
	}

}

// TestWatchRelease: a watch whose client goes gives its place back.
func TestWatchRelease(t *testing.T) {
	saved := socketLimits
	socketLimits.watches, socketLimits.watchesPerClient = 1, 1
	defer func() { socketLimits = saved }()
	st := status.NewStore(nil)
	dir := t.TempDir()
	o := Options{Store: st, Watcher: st, Socket: filepath.Join(dir, "s.sock")}
	serveOpts(t, o)
	hc := socketHTTP(o.Socket)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://podvisor/pods?watch=true", nil)
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first watch: %v %v", resp, err)
	}
	if code, _ := rawWatch(t, hc, "http://podvisor", "/pods"); code != http.StatusTooManyRequests {
		t.Fatalf("second watch: %d, want 429", code)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, msg := rawWatch(t, hc, "http://podvisor", "/pods")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a watch after the first ended: %d %s", code, msg)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestWatchClient: the key of the per-client cap: the peer's uid on the
// socket; on the TLS port the verified certificate's user, else the
// bearer token (hashed, so the message never shows it).
func TestWatchClient(t *testing.T) {
	withCN := func(cn string) *tls.ConnectionState {
		return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: cn}}}}}
	}
	for _, tc := range []struct {
		name   string
		remote bool
		peer   *Peer
		tls    *tls.ConnectionState
		auth   string
		want   string
	}{
		{"socket peer", false, &Peer{UID: 1000, PID: 5}, nil, "", "uid 1000"},
		{"socket without a peer", false, nil, nil, "", "an unknown peer"},
		{"certificate", true, nil, withCN("admin"), "Bearer secret", `user "admin"`},
		{"token", true, nil, &tls.ConnectionState{}, "Bearer secret", "the bearer token with SHA-256 2bb80d537b1d..."},
		{"token, lower case scheme", true, nil, nil, "bearer  secret ", "the bearer token with SHA-256 2bb80d537b1d..."},
		{"certificate without a name", true, nil, withCN(""), "", "anonymous clients"},
		{"a peer on the TLS port is no identity", true, &Peer{UID: 0}, nil, "", "anonymous clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/pods?watch=true", nil)
			if tc.peer != nil {
				r = r.WithContext(context.WithValue(r.Context(), peerKey{}, *tc.peer))
			}
			r.TLS = tc.tls
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			if got := watchClient(r, tc.remote); got != tc.want {
				t.Errorf("watchClient = %q, want %q", got, tc.want)
			}
			if strings.Contains(watchClient(r, tc.remote), "secret") {
				t.Error("the token itself is in the key")
			}
		})
	}
}
