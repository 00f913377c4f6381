package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrStreamProtocol means the daemon's stream broke the framing or ended
// without a status.
var ErrStreamProtocol = errors.New("stream protocol error")

// StreamOptions are an exec's or attach's parameters and local streams.
type StreamOptions struct {
	// Container is the container's name; empty picks the default.
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
	// Notice gets the daemon's messages for the user, such as which
	// container was defaulted; nil drops them.
	Notice func(string)
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

// Exec runs cmd in a container of pod and copies the streams until it
// exits. It returns nil for exit code 0, an *ExitError for another exit
// code or a command that could not start, and other errors when the
// session could not be had.
func (c *Client) Exec(ctx context.Context, pod string, cmd []string, o StreamOptions) error {
	q := url.Values{"command": cmd}
	return c.stream(ctx, "exec", pod, q, o)
}

// Attach connects the streams to the main process of a container of pod
// until the process exits, ctx ends or, with Stdin, Stdin ends.
func (c *Client) Attach(ctx context.Context, pod string, o StreamOptions) error {
	return c.stream(ctx, "attach", pod, url.Values{}, o)
}

func (c *Client) stream(ctx context.Context, verb, pod string, q url.Values, o StreamOptions) error {
	if ns, n, ok := strings.Cut(pod, "/"); ok {
		q.Set("namespace", ns)
		pod = n
	}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	q.Set("stdin", strconv.FormatBool(o.Stdin != nil))
	q.Set("tty", strconv.FormatBool(o.TTY))
	if o.Size.Width > 0 && o.Size.Height > 0 {
		q.Set("width", strconv.Itoa(int(o.Size.Width)))
		q.Set("height", strconv.Itoa(int(o.Size.Height)))
	}
	path := "/pods/" + url.PathEscape(pod) + "/" + verb
	u := url.URL{Scheme: c.scheme, Host: c.host, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", StreamProtocol)
	resp, err := c.http.Do(req)
	if err != nil {
		if de := dialFailure(err); de != nil {
			return de
		}
		return fmt.Errorf("%s: %w", verb, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
			return &APIError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
		}
		return &APIError{Code: resp.StatusCode, Message: fmt.Sprintf("%s: %s: %s", verb, resp.Status, strings.TrimSpace(string(body)))}
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return fmt.Errorf("%w: the 101 answer has no connection", ErrStreamProtocol)
	}
	defer conn.Close()
	if o.Notice != nil {
		for _, n := range resp.Header.Values(noticeHeader) {
			o.Notice(n)
		}
	}
	// Closing the connection unblocks the reads and writes below.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	return runClientSession(ctx, conn, o)
}

// runClientSession copies o's streams over conn's frames until the status
// frame, and returns the status as an error (nil for exit code 0).
func runClientSession(ctx context.Context, conn io.ReadWriter, o StreamOptions) error {
	fw := &frameWriter{w: conn}
	done := make(chan struct{})
	defer close(done)
	if o.Stdin != nil {
		go func() {
			_, err := io.Copy(fw.channel(chanStdin), o.Stdin)
			if err == nil { // at the end of stdin, not a broken connection
				_ = fw.write(chanStdinClose, nil)
			}
		}()
	}
	if o.Resize != nil {
		go func() {
			for {
				select {
				case ts := <-o.Resize:
					b, _ := json.Marshal(ts)
					if fw.write(chanResize, b) != nil {
						return
					}
				case <-done:
					return
				}
			}
		}()
	}
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	r := bufio.NewReader(conn)
	var buf []byte
	for {
		ch, p, err := readFrame(r, &buf)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("%w: the daemon closed the session without a status (did podvisor stop?)", ErrStreamProtocol)
			}
			return fmt.Errorf("%w: %v", ErrStreamProtocol, err)
		}
		switch ch {
		case chanStdout:
			if _, err := stdout.Write(p); err != nil {
				return fmt.Errorf("write stdout: %w", err)
			}
		case chanStderr:
			if _, err := stderr.Write(p); err != nil {
				return fmt.Errorf("write stderr: %w", err)
			}
		case chanStatus:
			var st streamStatus
			if err := json.Unmarshal(p, &st); err != nil {
				return fmt.Errorf("%w: bad status %q: %v", ErrStreamProtocol, p, err)
			}
			if st.ExitCode == 0 && st.Error == "" {
				return nil
			}
			return &ExitError{Code: st.ExitCode, Message: st.Error}
		default:
			return fmt.Errorf("%w: unexpected frame on channel %d", ErrStreamProtocol, ch)
		}
	}
}
