package probes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const podName = `"web-node_default(uid-1)"`

func TestExecHook(t *testing.T) {
	ex := &fakeExec{do: func(ctx context.Context, cmd []string) ([]byte, int, error) {
		switch cmd[0] {
		case "ok":
			return []byte("done"), 0, nil
		case "norun":
			return nil, -1, errors.New("container not running")
		}
		return []byte("bad"), 1, nil
	}}
	c := &v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "X", Value: "y"}}}
	hook := func(cmd ...string) *v1.LifecycleHandler {
		return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
	}
	if msg, err := RunHook(t.Context(), hook("ok", "$(X)"), target(c), HookOptions{Exec: ex}); msg != "" || err != nil {
		t.Fatalf("got %q %v", msg, err)
	}
	if got := ex.calls[0]; got[1] != "$(X)" || ex.ids[0] != "ctr-1" {
		t.Errorf("exec'd %q in %s: kubelet does not expand a hook's command", got, ex.ids[0])
	}
	msg, err := RunHook(t.Context(), hook("sh", "-c", "exit 1"), target(c), HookOptions{Exec: ex})
	want := `Exec lifecycle hook ([sh -c exit 1]) for Container "app" in Pod ` + podName +
		` failed - error: command 'sh -c exit 1' exited with 1: bad, message: "bad"`
	if err == nil || msg != want {
		t.Fatalf("got %q %v, want %q", msg, err, want)
	}
	msg, err = RunHook(t.Context(), hook("norun"), target(c), HookOptions{Exec: ex})
	want = `Exec lifecycle hook ([norun]) for Container "app" in Pod ` + podName + ` failed - error: container not running, message: ""`
	if err == nil || msg != want {
		t.Fatalf("got %q %v, want %q", msg, err, want)
	}
}

func TestHTTPHook(t *testing.T) {
	seen := make(chan *http.Request, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	port := serverPort(t, srv)
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "admin", ContainerPort: int32(port)}}}
	hook := func(port intstr.IntOrString, path string) *v1.LifecycleHandler {
		return &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: port, Path: path}}
	}
	if msg, err := RunHook(t.Context(), hook(intstr.FromString("admin"), "/stop"), target(c), HookOptions{}); msg != "" || err != nil {
		t.Fatalf("got %q %v", msg, err)
	}
	r := <-seen
	if r.URL.Path != "/stop" || r.Header.Get("User-Agent") != "kube-lifecycle/1.37" {
		t.Errorf("request %s with User-Agent %q", r.URL.Path, r.Header.Get("User-Agent"))
	}
	// kubelet does not look at the status code of a hook's response.
	if msg, err := RunHook(t.Context(), hook(intstr.FromInt(port), "/fail"), target(c), HookOptions{}); msg != "" || err != nil {
		t.Fatalf("500: got %q %v", msg, err)
	}
	<-seen

	refused := closedPort(t)
	msg, err := RunHook(t.Context(), hook(intstr.FromInt(refused), "/stop"), target(c), HookOptions{})
	want := fmt.Sprintf(`HTTP lifecycle hook (/stop) for Container "app" in Pod %s failed - error: Get "http://127.0.0.1:%d/stop": dial tcp 127.0.0.1:%d: connect: connection refused`,
		podName, refused, refused)
	if err == nil || msg != want {
		t.Fatalf("refused: got %q %v, want %q", msg, err, want)
	}

	// An HTTPS hook answered in plain HTTP is retried over HTTP.
	https := hook(intstr.FromInt(port), "/stop")
	https.HTTPGet.Scheme = v1.URISchemeHTTPS
	var warned string
	o := HookOptions{OnWarning: func(reason, message string) { warned = reason + ": " + message }}
	if msg, err := RunHook(t.Context(), https, target(c), o); msg != "" || err != nil {
		t.Fatalf("https fallback: got %q %v", msg, err)
	}
	<-seen
	if want := fmt.Sprintf("LifecycleHTTPFallback: request to HTTPS lifecycle hook 127.0.0.1:%d got HTTP response, retry with HTTP succeeded", port); warned != want {
		t.Errorf("warning %q, want %q", warned, want)
	}
}

func TestSleepHook(t *testing.T) {
	clock := newFakeClock()
	h := &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}
	done := make(chan error, 1)
	go func() {
		_, err := RunHook(t.Context(), h, target(&v1.Container{Name: "app"}), HookOptions{Clock: clock})
		done <- err
	}()
	eventually(t, "the sleep to start", func() bool { d, ok := clock.NextIn(); return ok && d == 5*time.Second })
	clock.Step(5*time.Second - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("woke early: %v", err)
	default:
	}
	clock.Step(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		msg, err := RunHook(ctx, h, target(&v1.Container{Name: "app"}), HookOptions{Clock: clock})
		want := `Sleep lifecycle hook (5) for Container "app" in Pod ` + podName + ` failed - error: container terminated before sleep hook finished`
		if msg != want {
			err = fmt.Errorf("message %q, want %q", msg, want)
		} else if err == nil {
			err = errors.New("no error")
		} else {
			err = nil
		}
		done <- err
	}()
	eventually(t, "the sleep to start", func() bool { return clock.Waiters() == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestTCPSocketHookIsInvalid(t *testing.T) {
	h := &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(80)}}
	msg, err := RunHook(t.Context(), h, target(&v1.Container{Name: "app"}), HookOptions{})
	if !errors.Is(err, ErrInvalidHandler) || !strings.HasPrefix(msg, "Cannot run handler: invalid handler: ") {
		t.Fatalf("got %q %v", msg, err)
	}
}
