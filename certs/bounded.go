package certs

import (
	"context"
	"io"
	"net/http"
	"time"
)

// bounded bounds every request but a watch by d: a watch (the manager's
// wait for its CSR to be issued) lasts as long as the server's timeout
// and the manager's own 15 minutes allow, so that it is not cut and
// restarted every d.
type bounded struct {
	rt http.RoundTripper
	d  time.Duration
}

func (b bounded) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") == "true" {
		return b.rt.RoundTrip(r)
	}
	ctx, cancel := context.WithTimeout(r.Context(), b.d)
	resp, err := b.rt.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
