package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
	"time"

	"github.com/podvisor/podvisor/status"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// serve starts Serve on a fresh socket and waits until it answers. The
// returned stop cancels it and returns Serve's result.
func serve(t *testing.T, socket string, s Store) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Options{Socket: socket, Store: s, Log: slog.New(slog.DiscardHandler)}) }()

	c := NewClient(socket)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.Pods(t.Context())
		if err == nil {
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("Serve returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("server did not answer within 5s: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	var stopped bool
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case result = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Serve did not return within 10s of cancel")
			}
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// rawGet does a plain HTTP GET over the socket, for status codes and bodies.
func rawGet(t *testing.T, socket, path string) (int, []byte) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://podvisor"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func staticPod(ns, manifestName, node string) *v1.Pod {
	name := manifestName + "-" + node
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ns,
			Name:        name,
			UID:         types.UID(ns + "-" + name),
			Annotations: map[string]string{status.ManifestNameAnnotation: manifestName},
		},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
}

func TestServeAndClient(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "podvisor")
	socket := filepath.Join(dir, "podvisor.sock")
	s := status.NewStore(slog.New(slog.DiscardHandler))
	web := staticPod("default", "web", "node1")
	s.SetPod(web)
	s.SetPod(staticPod("default", "api", "node1"))
	s.SetPod(staticPod("kube-system", "api", "node1"))
	s.SetPod(staticPod("kube-system", "etcd", "node1"))
	s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "Started", "Started container app")

	stop := serve(t, socket, s)
	ctx := t.Context()
	c := NewClient(socket)

	t.Run("socket and directory modes", func(t *testing.T) {
		fi, err := os.Lstat(socket)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket mode = %v, want socket 0600", fi.Mode())
		}
		di, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if di.Mode().Perm() != 0o700 {
			t.Errorf("socket directory mode = %v, want 0700", di.Mode().Perm())
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("socket directory holds %d entries, want just the socket", len(entries))
		}
	})

	t.Run("pods", func(t *testing.T) {
		list, err := c.Pods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if list.Kind != "PodList" || list.APIVersion != "v1" {
			t.Errorf("TypeMeta = %+v, want v1 PodList", list.TypeMeta)
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		if got := strings.Join(names, " "); got != "default/api-node1 default/web-node1 kube-system/api-node1 kube-system/etcd-node1" {
			t.Errorf("pods = %s", got)
		}
	})

	t.Run("pod by name", func(t *testing.T) {
		for _, tc := range []struct{ query, want string }{
			{"web-node1", "default/web-node1"},
			{"web", "default/web-node1"},
			{"etcd", "kube-system/etcd-node1"},
			{"kube-system/api", "kube-system/api-node1"},
			{"default/api-node1", "default/api-node1"},
		} {
			p, err := c.Pod(ctx, tc.query)
			if err != nil {
				t.Errorf("Pod(%q): %v", tc.query, err)
				continue
			}
			if got := p.Namespace + "/" + p.Name; got != tc.want {
				t.Errorf("Pod(%q) = %s, want %s", tc.query, got, tc.want)
			}
		}
	})

	t.Run("ambiguous name", func(t *testing.T) {
		for _, q := range []string{"api", "api-node1"} {
			_, err := c.Pod(ctx, q)
			if !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("Pod(%q) err = %v, want ErrAmbiguous", q, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "default/api-node1") || !strings.Contains(msg, "kube-system/api-node1") {
				t.Errorf("ambiguity error does not name the candidates: %s", msg)
			}
		}
		code, _ := rawGet(t, socket, "/pods/api")
		if code != http.StatusConflict {
			t.Errorf("status = %d, want 409", code)
		}
	})

	t.Run("not found", func(t *testing.T) {
		_, err := c.Pod(ctx, "nope")
		if !errors.Is(err, ErrNotFound) || err.Error() != `pods "nope" not found` {
			t.Errorf("err = %v, want ErrNotFound saying pods \"nope\" not found", err)
		}
		code, body := rawGet(t, socket, "/pods/nope")
		if code != http.StatusNotFound {
			t.Errorf("status = %d, want 404", code)
		}
		var st map[string]any
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("404 body %q: %v", body, err)
		}
		for k, v := range map[string]any{"kind": "Status", "status": "Failure", "reason": "NotFound", "code": float64(404), "message": `pods "nope" not found`} {
			if st[k] != v {
				t.Errorf("404 body %s = %v, want %v", k, st[k], v)
			}
		}
	})

	t.Run("events", func(t *testing.T) {
		evs, err := c.Events(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if evs.Kind != "EventList" || len(evs.Items) != 1 || evs.Items[0].Reason != "Started" || evs.Items[0].InvolvedObject.Name != "web-node1" {
			t.Errorf("events = %+v", evs)
		}
	})

	t.Run("healthz", func(t *testing.T) {
		if err := c.Healthz(ctx); err != nil {
			t.Fatalf("Healthz: %v", err)
		}
		if code, body := rawGet(t, socket, "/healthz"); code != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
			t.Errorf("healthy: %d %q, want 200 ok", code, body)
		}
		s.SetHealth(errors.New("containerd not connected"))
		err := c.Healthz(ctx)
		if !errors.Is(err, ErrUnhealthy) || !strings.Contains(err.Error(), "containerd not connected") {
			t.Errorf("Healthz err = %v, want ErrUnhealthy with the reason", err)
		}
		if code, body := rawGet(t, socket, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "containerd not connected") {
			t.Errorf("unhealthy: %d %q, want 503 with the reason", code, body)
		}
		s.SetHealth(nil)
	})

	t.Run("unknown path", func(t *testing.T) {
		if code, _ := rawGet(t, socket, "/nodes"); code != http.StatusNotFound {
			t.Errorf("status = %d, want 404", code)
		}
	})

	t.Run("second server refused", func(t *testing.T) {
		err := Serve(ctx, Options{Socket: socket, Store: s, Log: slog.New(slog.DiscardHandler)})
		if !errors.Is(err, ErrSocketInUse) {
			t.Fatalf("second Serve err = %v, want ErrSocketInUse", err)
		}
		if _, err := c.Pods(ctx); err != nil {
			t.Errorf("first server hurt by the second: %v", err)
		}
	})

	if err := stop(); err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after shutdown: %v", err)
	}
	_, err := c.Pods(ctx)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err after shutdown = %v, want ErrUnreachable", err)
	}
	if want := "cannot reach podvisor at " + socket + ": is `podvisor run` running? ("; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want it to start with %q", err, want)
	}
}

func TestServeRemovesStaleSocket(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "podvisor.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a dead server's socket file stays behind

	s := status.NewStore(nil)
	s.SetPod(staticPod("default", "web", "node1"))
	serve(t, socket, s)
	if _, err := NewClient(socket).Pod(t.Context(), "web"); err != nil {
		t.Errorf("Pod: %v", err)
	}
}

func TestServeRefusesNonSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podvisor.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Serve(t.Context(), Options{Socket: path, Store: status.NewStore(nil)})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("err = %v, want a not-a-socket error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Error("Serve touched a file that is not a socket")
	}
}

func TestClientMissingSocket(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "absent.sock")
	c := NewClient(socket)
	for name, call := range map[string]func() error{
		"Pods":    func() error { _, err := c.Pods(t.Context()); return err },
		"Pod":     func() error { _, err := c.Pod(t.Context(), "web"); return err },
		"Events":  func() error { _, err := c.Events(t.Context()); return err },
		"Healthz": func() error { return c.Healthz(t.Context()) },
	} {
		err := call()
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s: err = %v, want ErrUnreachable", name, err)
			continue
		}
		want := "cannot reach podvisor at " + socket + ": is `podvisor run` running? (connect: no such file or directory)"
		if err.Error() != want {
			t.Errorf("%s: err = %q, want %q", name, err, want)
		}
	}
}

// TestStatusIsAPIServerShaped decodes the error body as metav1.Status, as
// client-go would.
func TestStatusIsAPIServerShaped(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "podvisor.sock")
	serve(t, socket, status.NewStore(nil))
	_, body := rawGet(t, socket, "/pods/x")
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if st.APIVersion != "v1" || st.Details == nil || st.Details.Name != "x" || st.Details.Kind != "pods" {
		t.Errorf("status = %+v", st)
	}
}

func TestServeNeedsStore(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "podvisor.sock")
	if err := Serve(t.Context(), Options{Socket: socket}); err == nil || !strings.Contains(err.Error(), "no Store") {
		t.Fatalf("Serve without a Store: err = %v", err)
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Serve without a Store created its socket: %v", err)
	}
}

// The socket is root's only from its first moment: even with a umask of 0,
// nobody can connect while it is being set up, and it is 0600 when Listen
// returns, without the umask having been touched.
func TestSocketNeverWider(t *testing.T) {
	prereq.Root(t, "to act as another user")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	// The test's temp dirs are 0700: open them so that only what
	// listenUnix does keeps another user out.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	socket := filepath.Join(dir, "podvisor.sock")

	var during []string
	ran := false
	socketBound = func(tmp string) {
		ran = true
		if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
			during = append(during, fmt.Sprintf("%s exists before the socket is restricted: %v", socket, err))
		}
		if err := connectAsNobody(tmp); !errors.Is(err, unix.EACCES) {
			during = append(during, fmt.Sprintf("nobody connecting to the socket being set up: %v, want permission denied", err))
		}
	}
	defer func() { socketBound = nil }()
	ln, fi, err := listenUnix(t.Context(), socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !ran {
		t.Fatal("the socketBound hook did not run")
	}
	for _, d := range during {
		t.Error(d)
	}

	st, err := os.Lstat(socket)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 || !os.SameFile(st, fi) {
		t.Errorf("socket right after listen: %v, want a 0600 socket", st.Mode())
	}
	if err := connectAsNobody(socket); !errors.Is(err, unix.EACCES) {
		t.Errorf("nobody connecting: %v, want permission denied", err)
	}
	if c, err := net.Dial("unix", socket); err != nil {
		t.Errorf("root cannot connect: %v", err)
	} else {
		c.Close()
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("socket directory holds %d entries, want just the socket", len(entries))
	}
	if got := syscall.Umask(0); got != 0 {
		t.Errorf("umask changed to %#o", got)
	}
}

// connectAsNobody connects to the unix socket at path from a thread with
// the credentials of user and group nobody and no capabilities. The thread
// is never unlocked, so it ends with the call instead of going back to the
// runtime.
func connectAsNobody(path string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Raw syscalls: the unix and syscall wrappers change every thread.
		const nobody = 65534
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			errc <- fmt.Errorf("setgroups: %w", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, nobody, nobody, nobody); e != 0 {
			errc <- fmt.Errorf("setresgid: %w", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, nobody, nobody, nobody); e != 0 {
			errc <- fmt.Errorf("setresuid: %w", e)
			return
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		errc <- unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	}()
	return <-errc
}
