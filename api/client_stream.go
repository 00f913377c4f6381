package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// StreamOptions are an exec's or attach's parameters and local streams.
type StreamOptions struct {
	// Container is the container's name, as kubelet's paths need it: the
	// caller picks the default (kubectl does too).
	Container string
	// Stdin, when not nil, is sent to the process; its end closes the
	// process's stdin.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer // unused with TTY
	TTY    bool
	// Size is the local terminal's size at the start (zero: unknown).
	Size TermSize
	// Resize delivers the local terminal's later sizes.
	Resize <-chan TermSize
}

// ExitError is a session's end other than exit code 0: the remote
// command's exit code and, when the command could not run, why.
type ExitError struct {
	Code    int
	Message string
}

// Error says what ended the session.
func (e *ExitError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("command terminated with exit code %d", e.Code)
}

// ExitCode is the remote command's exit code.
func (e *ExitError) ExitCode() int { return e.Code }

// Exec runs cmd in a container of pod ("namespace/name", the pod's full
// name) and copies the streams until it exits, over kubelet's
// /exec/{namespace}/{pod}/{container} and Kubernetes' streaming protocol
// (SPDY, as kubectl speaks it to kubelet). It returns nil for exit code 0,
// an *ExitError for another exit code or a command that could not start,
// and other errors when the session could not be had.
func (c *Client) Exec(ctx context.Context, pod string, cmd []string, o StreamOptions) error {
	return c.stream(ctx, "exec", pod, url.Values{"command": cmd}, o)
}

// Attach connects the streams to the main process of a container of pod
// ("namespace/name") until the process exits, ctx ends or, with Stdin,
// Stdin ends, over kubelet's /attach path. The process's non-zero exit
// code comes back as an *ExitError.
func (c *Client) Attach(ctx context.Context, pod string, o StreamOptions) error {
	return c.stream(ctx, "attach", pod, url.Values{AttachExitCodeParam: {"1"}}, o)
}

// AttachExitCodeParam asks kubelet's attach for the process's exit code,
// reported as exec reports it (a podvisor extension kubelet lacks: kubectl
// does not send it and gets kubelet's answer).
const AttachExitCodeParam = "exitCode"

func (c *Client) stream(ctx context.Context, verb, pod string, q url.Values, o StreamOptions) error {
	ns, name, ok := strings.Cut(pod, "/")
	if !ok || ns == "" || name == "" || o.Container == "" {
		return fmt.Errorf("%s: want namespace/name and a container, not %q and %q", verb, pod, o.Container)
	}
	q.Set("output", "1")
	if o.Stdin != nil {
		q.Set("input", "1")
	}
	if o.TTY {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	u := &url.URL{Scheme: c.scheme, Host: c.host, Path: "/" + verb + "/" + ns + "/" + name + "/" + o.Container, RawQuery: q.Encode()}
	base, ok := c.http.Transport.(*http.Transport)
	if !ok {
		return fmt.Errorf("%s: the client's transport %T cannot dial a stream", verb, c.http.Transport)
	}
	// remotecommand keeps only the text of a dial's error: the error
	// itself (unreachable, untrusted socket) is kept here.
	var mu sync.Mutex
	var dialErr error
	tr := base.Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := base.DialContext(ctx, network, addr)
		if err != nil {
			mu.Lock()
			dialErr = err
			mu.Unlock()
		}
		return conn, err
	}
	// The SPDY round tripper dials through the client's own transport:
	// the socket (and its peer check) or the TLS connection.
	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{UpgradeTransport: tr, PingPeriod: streamPingPeriod})
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(rt, statusUpgrader{clientspdy.NewUpgraderForStreaming(rt)}, http.MethodPost, u)
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	so := remotecommand.StreamOptions{Stdin: o.Stdin, Stdout: o.Stdout, Tty: o.TTY}
	if !o.TTY {
		so.Stderr = o.Stderr
		if so.Stderr == nil {
			so.Stderr = io.Discard
		}
	}
	if so.Stdout == nil {
		so.Stdout = io.Discard
	}
	if o.TTY {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		so.TerminalSizeQueue = &sizeQueue{ctx: sctx, first: o.Size, resize: o.Resize}
	}
	err = ex.StreamWithContext(ctx, so)
	mu.Lock()
	defer mu.Unlock()
	if err != nil && dialErr != nil {
		if de := dialFailure(dialErr); de != nil {
			return de
		}
	}
	return streamError(err)
}

// streamPingPeriod keeps an idle session's connection known alive, as
// kubectl's 5 s.
const streamPingPeriod = 5 * time.Second

// statusUpgrader answers a refused upgrade (no such pod, forbidden) as
// the API's other calls do: an *APIError with the Status's code and
// message.
type statusUpgrader struct{ clientspdy.Upgrader }

func (u statusUpgrader) NewConnection(resp *http.Response) (httpstream.Connection, error) {
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
			return nil, &APIError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
		}
		return nil, &APIError{Code: resp.StatusCode, Message: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))}
	}
	return u.Upgrader.NewConnection(resp)
}

// streamError turns remotecommand's errors into the API's: an exit code
// is an *ExitError (the protocol carries the code alone: why a command
// could not start is on its stderr), another error keeps the server's
// message without the prefixes the layers add.
func streamError(err error) error {
	if err == nil {
		return nil
	}
	if de := dialFailure(err); de != nil {
		return de
	}
	var ce exec.CodeExitError
	if errors.As(err, &ce) {
		return &ExitError{Code: ce.Code}
	}
	var ae *APIError
	if errors.As(err, &ae) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	msg := err.Error()
	for _, p := range []string{"unable to upgrade connection: ", "error executing remote command: ", "Internal error occurred: ",
		"error executing command in container: ", "error attaching to container: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return errors.New(msg)
}

// sizeQueue gives remotecommand the terminal's sizes: the first, then
// each resize, until ctx ends.
type sizeQueue struct {
	ctx    context.Context
	first  TermSize
	sent   bool
	resize <-chan TermSize
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	if !q.sent {
		q.sent = true
		if q.first.Width > 0 && q.first.Height > 0 {
			return &remotecommand.TerminalSize{Width: q.first.Width, Height: q.first.Height}
		}
	}
	select {
	case ts, ok := <-q.resize:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: ts.Width, Height: ts.Height}
	case <-q.ctx.Done():
		return nil
	}
}
