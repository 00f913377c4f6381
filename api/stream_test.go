package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseStreamQuery(t *testing.T) {
	tests := []struct {
		name    string
		q       string
		exec    bool
		want    streamRequest
		wantErr string
	}{
		{"exec", "command=sh&command=-c&command=x&container=a&stdin=true&tty=1&width=80&height=24", true,
			streamRequest{container: "a", command: []string{"sh", "-c", "x"}, stdin: true, tty: true, size: TermSize{80, 24}}, ""},
		{"exec without command", "container=a", true, streamRequest{}, "at least one command"},
		{"attach", "stdin=false", false, streamRequest{}, ""},
		{"attach with a command", "command=sh", false, streamRequest{}, "attach takes no command"},
		{"bad bool", "command=sh&tty=yes please", true, streamRequest{}, `tty="yes please"`},
		{"bad size", "command=sh&width=-1", true, streamRequest{}, `width="-1"`},
		{"size too big", "command=sh&height=70000", true, streamRequest{}, `height="70000"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.q)
			got, err := parseStreamQuery(q, tt.exec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func podWith(annotations map[string]string, containers []string, inits ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node", Annotations: annotations}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	for _, c := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: c})
	}
	return p
}

func TestPickContainer(t *testing.T) {
	tests := []struct {
		name       string
		pod        *v1.Pod
		ask        string
		want       string
		wantNotice string
		wantErr    string
	}{
		{"only one", podWith(nil, []string{"a"}), "", "a", "", ""},
		{"first of two", podWith(nil, []string{"a", "b"}), "", "a", `Defaulted container "a" out of: a, b`, ""},
		{"annotation", podWith(map[string]string{DefaultContainerAnnotation: "b"}, []string{"a", "b"}), "", "b", `Defaulted container "b" out of: a, b`, ""},
		{"annotation naming nothing", podWith(map[string]string{DefaultContainerAnnotation: "z"}, []string{"a", "b"}), "", "a", `Defaulted container "a"`, ""},
		{"init listed", podWith(nil, []string{"a"}, "i"), "", "a", `Defaulted container "a" out of: a, i (init)`, ""},
		{"named", podWith(nil, []string{"a", "b"}), "b", "b", "", ""},
		{"named init", podWith(nil, []string{"a"}, "i"), "i", "i", "", ""},
		{"unknown", podWith(nil, []string{"a", "b"}, "i"), "z", "", "", `container "z" is not valid for pod web-node: choose one of: [a b] or one of the init containers: [i]`},
		{"none", podWith(nil, nil), "", "", "", "has no containers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, notice, err := pickContainer(tt.pod, tt.ask)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != tt.want || !strings.HasPrefix(notice, tt.wantNotice) || (tt.wantNotice == "") != (notice == "") {
				t.Errorf("picked %q with notice %q, want %q with %q", c.Name, notice, tt.want, tt.wantNotice)
			}
		})
	}
}

func TestRunningStatus(t *testing.T) {
	running := v1.ContainerStatus{Name: "a", ContainerID: "containerd://abc", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	waiting := v1.ContainerStatus{Name: "a", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	done := v1.ContainerStatus{Name: "a", ContainerID: "containerd://abc", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}
	tests := []struct {
		name    string
		phase   v1.PodPhase
		st      []v1.ContainerStatus
		init    []v1.ContainerStatus
		wantErr string
	}{
		{"running", v1.PodRunning, []v1.ContainerStatus{running}, nil, ""},
		{"running init", v1.PodPending, nil, []v1.ContainerStatus{running}, ""},
		{"waiting", v1.PodRunning, []v1.ContainerStatus{waiting}, nil, "container a is not running: CrashLoopBackOff"},
		{"terminated", v1.PodRunning, []v1.ContainerStatus{done}, nil, "container a is not running: it terminated (Completed)"},
		{"completed pod", v1.PodSucceeded, []v1.ContainerStatus{done}, nil, "completed pod; current phase is Succeeded"},
		{"no status", v1.PodPending, nil, nil, "container a is not running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Pod{Status: v1.PodStatus{Phase: tt.phase, ContainerStatuses: tt.st, InitContainerStatuses: tt.init}}
			st, err := runningStatus(p, "a")
			if tt.wantErr == "" {
				if err != nil || st.ContainerID != "containerd://abc" {
					t.Errorf("status %v, err %v; want the running one", st, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// fakeStore serves fixed pods.
type fakeStore struct{ pods []v1.Pod }

func (f fakeStore) Pods() []v1.Pod     { return f.pods }
func (f fakeStore) Events() []v1.Event { return nil }
func (f fakeStore) Health() error      { return nil }

// fakeStreamer runs the test's function as the session.
type fakeStreamer struct {
	exec func(ctx context.Context, t StreamTarget, cmd []string, s Session) (int, error)
}

func (f fakeStreamer) Exec(ctx context.Context, t StreamTarget, cmd []string, s Session) (int, error) {
	return f.exec(ctx, t, cmd, s)
}

func (f fakeStreamer) Attach(ctx context.Context, t StreamTarget, s Session) (int, error) {
	return f.exec(ctx, t, nil, s)
}

// exitCodeError is an error with an exit code, as the runtime's StartError.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return "exec: \"nope\": executable file not found in $PATH" }
func (e exitCodeError) ExitCode() int { return e.code }

func streamPod() v1.Pod {
	p := staticPod("default", "web", "node")
	p.Spec.Containers = []v1.Container{{Name: "app"}, {Name: "tty", Stdin: true, TTY: true}}
	p.Status.Phase = v1.PodRunning
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, ContainerID: "containerd://id-" + c.Name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
	}
	return *p
}

// serveStreams serves streamPod with f on a fresh socket.
func serveStreams(t *testing.T, f fakeStreamer) *Client {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Socket: socket, Store: fakeStore{pods: []v1.Pod{streamPod()}}, Streamer: f, Log: slog.New(slog.DiscardHandler)})
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
	return c
}

func TestExecSession(t *testing.T) {
	var gotTarget StreamTarget
	var gotCmd []string
	c := serveStreams(t, fakeStreamer{exec: func(ctx context.Context, tg StreamTarget, cmd []string, s Session) (int, error) {
		gotTarget, gotCmd = tg, cmd
		in, err := io.ReadAll(s.Stdin)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(s.Stdout, "read %q", in)
		fmt.Fprint(s.Stderr, "to stderr")
		return 7, nil
	}})
	var out, errb bytes.Buffer
	var notices []string
	err := c.Exec(t.Context(), "web", []string{"sh", "-c", "x"}, StreamOptions{
		Stdin: strings.NewReader("some input"), Stdout: &out, Stderr: &errb,
		Notice: func(s string) { notices = append(notices, s) },
	})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 7 || ee.Error() != "command terminated with exit code 7" {
		t.Errorf("Exec: %v, want exit code 7", err)
	}
	if out.String() != `read "some input"` || errb.String() != "to stderr" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
	if gotTarget.ContainerID != "id-app" || gotTarget.Container.Name != "app" || fmt.Sprint(gotCmd) != "[sh -c x]" {
		t.Errorf("session ran %v in %+v", gotCmd, gotTarget)
	}
	if len(notices) != 1 || notices[0] != `Defaulted container "app" out of: app, tty` {
		t.Errorf("notices %q", notices)
	}
}

func TestExecSessionStartError(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(context.Context, StreamTarget, []string, Session) (int, error) {
		return 0, fmt.Errorf("exec in x: %w", exitCodeError{127})
	}})
	err := c.Exec(t.Context(), "web", []string{"nope"}, StreamOptions{Container: "app"})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 127 || !strings.Contains(ee.Message, "executable file not found") {
		t.Errorf("Exec: %#v, want exit 127 with runc's message", err)
	}
}

func TestExecSessionResize(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, _ []string, s Session) (int, error) {
		if !s.TTY || s.Stderr != nil || s.Size != (TermSize{80, 24}) {
			return 1, fmt.Errorf("session tty %v stderr %v size %v", s.TTY, s.Stderr, s.Size)
		}
		select {
		case ts := <-s.Resize:
			fmt.Fprintf(s.Stdout, "%dx%d", ts.Width, ts.Height)
			return 0, nil
		case <-time.After(10 * time.Second):
			return 1, errors.New("no resize")
		}
	}})
	resize := make(chan TermSize, 1)
	resize <- TermSize{Width: 120, Height: 40}
	var out bytes.Buffer
	err := c.Exec(t.Context(), "web", []string{"sh"}, StreamOptions{Container: "app", TTY: true, Size: TermSize{80, 24}, Resize: resize, Stdout: &out})
	if err != nil || out.String() != "120x40" {
		t.Errorf("Exec: %v, output %q; want the resize seen", err, out.String())
	}
}

func TestExecSessionClientGone(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	c := serveStreams(t, fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, _ []string, _ Session) (int, error) {
		close(started)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(10 * time.Second):
			ended <- errors.New("session not ended 10s after its client went away")
		}
		return 0, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- c.Exec(ctx, "web", []string{"sleep"}, StreamOptions{Container: "app"}) }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Exec after cancel: %v", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("session: %v", err)
	}
}

func TestStreamRefusals(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(context.Context, StreamTarget, []string, Session) (int, error) {
		return 0, errors.New("must not run")
	}})
	tests := []struct {
		name     string
		run      func() error
		wantCode int
		want     string
	}{
		{"no pod", func() error { return c.Exec(t.Context(), "nope", []string{"sh"}, StreamOptions{}) }, http.StatusNotFound, `pods "nope" not found`},
		{"no container", func() error { return c.Exec(t.Context(), "web", []string{"sh"}, StreamOptions{Container: "z"}) }, http.StatusBadRequest, "choose one of: [app tty]"},
		{"attach stdin without stdin: true", func() error {
			return c.Attach(t.Context(), "web", StreamOptions{Container: "app", Stdin: strings.NewReader("")})
		}, http.StatusBadRequest, "container app has no stdin to attach to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			var ae *APIError
			if !errors.As(err, &ae) || ae.Code != tt.wantCode || !strings.Contains(ae.Message, tt.want) {
				t.Errorf("got %v, want %d %q", err, tt.wantCode, tt.want)
			}
		})
	}
	// Without the Upgrade header the endpoint refuses before any session.
	resp, err := c.http.Post("http://podvisor/pods/web/exec?command=sh", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("POST without Upgrade: %s, want 426", resp.Status)
	}
}

func TestAttachTTYNotice(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(_ context.Context, _ StreamTarget, _ []string, s Session) (int, error) {
		fmt.Fprintf(s.Stdout, "tty=%v", s.TTY)
		return 0, nil
	}})
	var notices []string
	var out bytes.Buffer
	err := c.Attach(t.Context(), "web", StreamOptions{Container: "app", TTY: true, Stdout: &out, Notice: func(s string) { notices = append(notices, s) }})
	if err != nil || out.String() != "tty=false" || len(notices) != 1 || notices[0] != "Unable to use a TTY - container app did not allocate one" {
		t.Errorf("attach -t to a container without tty: %v, output %q, notices %q", err, out.String(), notices)
	}
}
