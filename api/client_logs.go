package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// logHeaderTimeout bounds how long Logs waits for the answer to begin.
const logHeaderTimeout = 30 * time.Second

// LogQuery encodes o as GET /pods/{name}/log's query, as the apiserver's
// parameter codec does, except that sinceTime keeps its nanoseconds (a
// client resuming a stream needs them).
func LogQuery(o *v1.PodLogOptions) url.Values {
	q := url.Values{}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	for name, b := range map[string]bool{"follow": o.Follow, "previous": o.Previous, "timestamps": o.Timestamps} {
		if b {
			q.Set(name, "true")
		}
	}
	if o.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*o.SinceSeconds, 10))
	}
	if o.SinceTime != nil {
		q.Set("sinceTime", o.SinceTime.UTC().Format(time.RFC3339Nano))
	}
	if o.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*o.LimitBytes, 10))
	}
	return q
}

// Logs opens a container's log: name as Pod takes it, o as the apiserver
// takes PodLogOptions. The caller reads the body to its end and closes it;
// with o.Follow it goes on until the pod is gone, and a read error (not
// io.EOF) means the stream broke, e.g. because podvisor stopped. ctx
// bounds the whole stream; the answer must begin within 30s, and a log
// not followed must not pause for a minute.
func (c *Client) Logs(ctx context.Context, name string, o *v1.PodLogOptions) (io.ReadCloser, error) {
	q := LogQuery(o)
	if ns, n, ok := strings.Cut(name, "/"); ok {
		q.Set("namespace", ns)
		name = n
	}
	ctx, cancel := context.WithCancel(ctx)
	slow := time.AfterFunc(logHeaderTimeout, cancel)
	resp, err := c.get(ctx, "/pods/"+url.PathEscape(name)+"/log", q)
	if !slow.Stop() && err != nil {
		err = fmt.Errorf("get log of %s: no answer within %s: %w", name, logHeaderTimeout, err)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
			return nil, &APIError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
		}
		return nil, &APIError{Code: resp.StatusCode, Message: fmt.Sprintf("get log of %s: %s: %s", name, resp.Status, strings.TrimSpace(string(body)))}
	}
	body := &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	if !o.Follow {
		// A log that is not followed comes without pauses; a daemon
		// that stops sending does not hang the client.
		body.idle = time.AfterFunc(logIdleTimeout, cancel)
		body.idle.Stop()
	}
	return body, nil
}

// logIdleTimeout bounds a pause in a log that is not followed.
const logIdleTimeout = time.Minute

// cancelBody releases the request's context when the body is closed, and
// cancels it when idle (if set) fires during a read.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	idle   *time.Timer
}

// Read times only the wait for the server, not the reader's own pauses
// (a pager that waits for its user).
func (b *cancelBody) Read(p []byte) (int, error) {
	if b.idle == nil {
		return b.ReadCloser.Read(p)
	}
	b.idle.Reset(logIdleTimeout)
	defer b.idle.Stop()
	return b.ReadCloser.Read(p)
}

func (b *cancelBody) Close() error {
	if b.idle != nil {
		b.idle.Stop()
	}
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
