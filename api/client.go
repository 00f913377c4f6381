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

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Errors a Client returns, checked with errors.Is.
var (
	// ErrUnreachable means nothing answers on the socket (missing or refused).
	ErrUnreachable = errors.New("cannot reach podvisor")
	// ErrNotFound means no pod has the name asked for.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous means more than one pod has the name asked for.
	ErrAmbiguous = errors.New("ambiguous name")
	// ErrUnhealthy means podvisor answers but reports itself unhealthy.
	ErrUnhealthy = errors.New("podvisor is unhealthy")
)

// Client talks to the local API that Serve provides.
type Client struct {
	socketPath string
	http       *http.Client
	// scheme and host of the requests' URLs: http://podvisor on the
	// socket, https://HOST:PORT for NewTLSClient.
	scheme, host string
}

// NewClient returns a Client for the API served on socketPath. It does not
// connect until a call is made. Each connection is checked before anything
// is sent on it: the process serving the socket must be root, or the
// client's own user (SO_PEERCRED); else the call fails with an error
// matching ErrUntrustedSocket that names the socket and that process's uid.
func NewClient(socketPath string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", socketPath)
			if err != nil {
				return nil, &unreachableError{path: socketPath, err: err}
			}
			// Before a byte is sent: the server must be root's (or ours).
			if err := checkPeer(conn, socketPath); err != nil {
				return nil, err
			}
			return conn, nil
		},
		MaxIdleConns: 2,
	}
	return &Client{socketPath: socketPath, http: &http.Client{Transport: tr}, scheme: "http", host: "podvisor"}
}

// unreachableError says plainly that the daemon is not there.
type unreachableError struct {
	path string
	err  error
}

func (e *unreachableError) Error() string {
	cause := e.err
	var op *net.OpError
	if errors.As(cause, &op) && op.Err != nil {
		cause = op.Err // "connect: no such file or directory", without the repeated path
	}
	return fmt.Sprintf("cannot reach podvisor at %s: is `podvisor run` running? (%v)", e.path, cause)
}

func (e *unreachableError) Unwrap() []error { return []error{ErrUnreachable, e.err} }

// APIError is an error answer from the local API, decoded from its
// metav1.Status body. errors.Is matches ErrNotFound for 404 and ErrAmbiguous
// for 409.
type APIError struct {
	Code    int                 // the HTTP status code
	Reason  metav1.StatusReason // the Status reason, such as NotFound; may be empty
	Message string              // the Status message
}

// Error returns the API's message, such as `pods "web" not found`.
func (e *APIError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) and errors.Is(err, ErrAmbiguous) work.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == http.StatusNotFound
	case ErrAmbiguous:
		return e.Code == http.StatusConflict
	}
	return false
}

// Pods returns all pods podvisor supervises, sorted by namespace/name.
func (c *Client) Pods(ctx context.Context) (*v1.PodList, error) {
	var list v1.PodList
	if err := c.getJSON(ctx, "/pods", nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// Pod returns one pod by its full name "<name>-<node>" or its manifest's own
// name; "namespace/name" limits the search to one namespace.
func (c *Client) Pod(ctx context.Context, name string) (*v1.Pod, error) {
	var q url.Values
	if ns, n, ok := strings.Cut(name, "/"); ok {
		q = url.Values{"namespace": {ns}}
		name = n
	}
	var pod v1.Pod
	if err := c.getJSON(ctx, "/pods/"+url.PathEscape(name), q, &pod); err != nil {
		return nil, err
	}
	return &pod, nil
}

// Events returns the recorded events, oldest first.
func (c *Client) Events(ctx context.Context) (*v1.EventList, error) {
	var list v1.EventList
	if err := c.getJSON(ctx, "/events", nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// Healthz returns nil when podvisor reports itself healthy, an error
// matching ErrUnhealthy with podvisor's reason when not, and an
// ErrUnreachable one when it does not answer.
func (c *Client) Healthz(ctx context.Context) error {
	resp, err := c.get(ctx, "/healthz", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("read health: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnhealthy, strings.TrimSpace(string(body)))
}

func (c *Client) get(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	u := url.URL{Scheme: c.scheme, Host: c.host, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if de := dialFailure(err); de != nil {
			return nil, de
		}
		return nil, fmt.Errorf("get %s: %w", path, err)
	}
	return resp, nil
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, out any) error {
	resp, err := c.get(ctx, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
			return &APIError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
		}
		return &APIError{Code: resp.StatusCode, Message: fmt.Sprintf("get %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}
