package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
)

// serveAsEnv, in the environment of this test binary, makes it serve a
// stand-in API on the socket it names instead of running the tests: the
// server of another user in TestClientRefusesForeignServer.
const serveAsEnv = "PODVISOR_API_TEST_SERVE"

func TestMain(m *testing.M) {
	if sock := os.Getenv(serveAsEnv); sock != "" {
		os.Exit(serveStandIn(sock))
	}
	os.Exit(m.Run())
}

// serveStandIn answers every request with 200 until killed.
func serveStandIn(sock string) int {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
	fmt.Fprintln(os.Stderr, err)
	return 1
}

func TestTrustPeer(t *testing.T) {
	for _, tc := range []struct {
		peer, own int
		ok        bool
		msg       string
	}{
		{peer: 0, own: 0, ok: true},
		{peer: 0, own: 1000, ok: true},
		{peer: 1000, own: 1000, ok: true},
		{peer: 1000, own: 0, msg: "refusing /run/x.sock: its server runs as uid 1000, not root (uid 0);"},
		{peer: 1001, own: 1000, msg: "refusing /run/x.sock: its server runs as uid 1001, not root (uid 0) or you (uid 1000);"},
	} {
		err := trustPeer("/run/x.sock", tc.peer, tc.own)
		switch {
		case tc.ok && err != nil:
			t.Errorf("peer %d, own %d: %v, want trusted", tc.peer, tc.own, err)
		case !tc.ok && (!errors.Is(err, ErrUntrustedSocket) || !strings.HasPrefix(fmt.Sprint(err), tc.msg)):
			t.Errorf("peer %d, own %d: %v, want ErrUntrustedSocket starting %q", tc.peer, tc.own, err, tc.msg)
		}
	}
}

// TestClientRefusesForeignServer: a socket served by a process of user
// nobody, as one planted in a shared directory would be, is refused before
// anything is sent (exec input included), naming the socket and the uid;
// one served by root is used.
func TestClientRefusesForeignServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to serve as another user")
	}
	const nobody = 65534
	// Nobody must be able to run this test binary and to bind in the
	// socket's directory: a directory of our own under /tmp.
	dir, err := os.MkdirTemp("", "pv-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sockDir := filepath.Join(dir, "shared")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sockDir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "api.test")
	copyExecutable(t, bin)
	sock := filepath.Join(sockDir, "podvisor.sock")

	child := exec.Command(bin)
	child.Env = append(os.Environ(), serveAsEnv+"="+sock)
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stderr bytes.Buffer
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	t.Cleanup(func() {
		child.Process.Kill()
		<-exited
	})
	// The stand-in answers a plain client: only the check refuses it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, err := plainGet(t, sock)
		if err == nil && code == http.StatusOK {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the stand-in server exited: %v: %s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in server did not answer within 10s: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}

	c := NewClient(sock)
	err = c.Healthz(t.Context())
	want := fmt.Sprintf("refusing %s: its server runs as uid %d, not root (uid 0)", sock, nobody)
	if !errors.Is(err, ErrUntrustedSocket) || !strings.HasPrefix(fmt.Sprint(err), want) {
		t.Errorf("Healthz on nobody's socket: %v, want ErrUntrustedSocket starting %q", err, want)
	}
	if _, err := c.Pods(t.Context()); !errors.Is(err, ErrUntrustedSocket) {
		t.Errorf("Pods on nobody's socket: %v, want ErrUntrustedSocket", err)
	}
	// exec -i: the input is never read, let alone sent.
	in := &readSpy{r: strings.NewReader("secret\n")}
	if err := c.Exec(t.Context(), "default/web", []string{"sh"}, StreamOptions{Container: "c", Stdin: in, Stdout: io.Discard, Stderr: io.Discard}); !errors.Is(err, ErrUntrustedSocket) {
		t.Errorf("Exec on nobody's socket: %v, want ErrUntrustedSocket", err)
	}
	if in.read {
		t.Error("Exec read its input for nobody's socket")
	}

	// root's server (this process) is used.
	rootSock := filepath.Join(t.TempDir(), "podvisor.sock")
	serve(t, rootSock, status.NewStore(slog.New(slog.DiscardHandler)))
	if err := NewClient(rootSock).Healthz(t.Context()); err != nil {
		t.Errorf("Healthz on root's socket: %v", err)
	}
}

// readSpy records whether it was read.
type readSpy struct {
	r    io.Reader
	read bool
}

func (s *readSpy) Read(p []byte) (int, error) {
	s.read = true
	return s.r.Read(p)
}

// copyExecutable puts this test binary at dst, mode 0755.
func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// plainGet does a GET / over the socket without the Client's check.
func plainGet(t *testing.T, socket string) (int, []byte, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://podvisor/healthz", nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
