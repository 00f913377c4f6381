package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

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
	waitHealthy(t, c)
	return c
}

func waitHealthy(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.Healthz(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// The CLI's client against the server, on kubelet's paths over the
// socket (SPDY): the pod is named exactly, the container too.

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
	err := c.Exec(t.Context(), "default/web-node", []string{"sh", "-c", "x"}, StreamOptions{
		Container: "app", Stdin: strings.NewReader("some input"), Stdout: &out, Stderr: &errb,
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
	// Without stdin the process's stdin is empty.
	c = serveStreams(t, fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, _ []string, s Session) (int, error) {
		if s.Stdin != nil {
			return 1, errors.New("a stdin nobody sent")
		}
		return 0, nil
	}})
	if err := c.Exec(t.Context(), "default/web-node", []string{"true"}, StreamOptions{Container: "app"}); err != nil {
		t.Errorf("Exec without stdin: %v", err)
	}
}

func TestExecSessionStartError(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(context.Context, StreamTarget, []string, Session) (int, error) {
		return 0, fmt.Errorf("exec in x: %w", exitCodeError{127})
	}})
	var errb bytes.Buffer
	err := c.Exec(t.Context(), "default/web-node", []string{"nope"}, StreamOptions{Container: "app", Stderr: &errb})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 127 || errb.String() != `exec in x: exec: "nope": executable file not found in $PATH`+"\n" {
		t.Errorf("Exec: %#v, stderr %q; want exit 127 with runc's message on stderr", err, errb.String())
	}
}

// TestExecSessionResize: the first size is the session's Size when the
// process starts (the server waits for it), then a resize reaches the
// session's Resize.
func TestExecSessionResize(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, _ []string, s Session) (int, error) {
		if !s.TTY || s.Stderr != nil {
			return 1, fmt.Errorf("session tty %v stderr %v", s.TTY, s.Stderr)
		}
		if s.Size != (TermSize{80, 24}) {
			return 1, fmt.Errorf("size at start %v, want {80 24}", s.Size)
		}
		for _, want := range []TermSize{{120, 40}} {
			select {
			case ts := <-s.Resize:
				if ts != want {
					return 1, fmt.Errorf("size %v, want %v", ts, want)
				}
			case <-time.After(10 * time.Second):
				return 1, fmt.Errorf("no size %v", want)
			}
		}
		fmt.Fprint(s.Stdout, "sizes seen")
		return 0, nil
	}})
	resize := make(chan TermSize, 1)
	resize <- TermSize{Width: 120, Height: 40}
	var out bytes.Buffer
	err := c.Exec(t.Context(), "default/web-node", []string{"sh"}, StreamOptions{Container: "app", TTY: true, Size: TermSize{80, 24}, Resize: resize, Stdout: &out})
	if err != nil || out.String() != "sizes seen" {
		t.Errorf("Exec: %v, output %q; want the sizes seen", err, out.String())
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
	go func() { errc <- c.Exec(ctx, "default/web-node", []string{"sleep"}, StreamOptions{Container: "app"}) }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Exec after cancel: %v", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("session: %v", err)
	}
}

// TestExecSessionServerStops: a session podvisor's stop ends says so.
func TestExecSessionServerStops(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Socket: socket, Store: fakeStore{pods: []v1.Pod{streamPod()}}, Log: slog.New(slog.DiscardHandler),
			Streamer: fakeStreamer{exec: func(ctx context.Context, _ StreamTarget, _ []string, _ Session) (int, error) {
				close(started)
				<-ctx.Done()
				return 137, nil
			}}})
	}()
	defer func() { cancel(); <-done }()
	c := NewClient(socket)
	waitHealthy(t, c)
	errc := make(chan error, 1)
	go func() {
		errc <- c.Exec(t.Context(), "default/web-node", []string{"sleep"}, StreamOptions{Container: "app"})
	}()
	<-started
	cancel()
	var ee *ExitError
	if err := <-errc; err == nil || errors.As(err, &ee) || !strings.Contains(err.Error(), "podvisor is stopping") {
		t.Errorf("Exec when podvisor stopped: %v, want an error saying it stopped", err)
	}
}

func TestStreamRefusals(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(context.Context, StreamTarget, []string, Session) (int, error) {
		return 0, errors.New("must not run")
	}})
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"no pod", func() error {
			return c.Exec(t.Context(), "default/nope", []string{"sh"}, StreamOptions{Container: "app"})
		}, "pod default/nope does not exist on this node"},
		{"no container", func() error {
			return c.Exec(t.Context(), "default/web-node", []string{"sh"}, StreamOptions{Container: "z"})
		}, `container "z" not found in pod "web-node"`},
		{"attach stdin without stdin: true", func() error {
			return c.Attach(t.Context(), "default/web-node", StreamOptions{Container: "app", Stdin: strings.NewReader("")})
		}, "container app has no stdin to attach to"},
		{"no container named", func() error {
			return c.Exec(t.Context(), "default/web-node", []string{"sh"}, StreamOptions{})
		}, "exec: want namespace/name and a container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || err.Error() != tt.want && !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAttachSession: attach's output, the process's exit code back to
// the CLI, and a TTY the container lacks not given.
func TestAttachSession(t *testing.T) {
	c := serveStreams(t, fakeStreamer{exec: func(_ context.Context, _ StreamTarget, cmd []string, s Session) (int, error) {
		if cmd != nil {
			return 0, fmt.Errorf("attach ran %v", cmd)
		}
		fmt.Fprintf(s.Stdout, "tty=%v", s.TTY)
		return 4, nil
	}})
	var out bytes.Buffer
	err := c.Attach(t.Context(), "default/web-node", StreamOptions{Container: "app", TTY: true, Stdout: &out})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 4 || out.String() != "tty=false" {
		t.Errorf("attach -t to a container without tty: %v, output %q; want exit code 4 and no tty", err, out.String())
	}
}
