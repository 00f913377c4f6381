package registry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Mode is what a Proxy does with the body of a blob.
type Mode string

const (
	// Pass forwards blobs as they come.
	Pass Mode = ""
	// Stall sends the first 64 KiB of each blob, then nothing until the
	// client leaves.
	Stall Mode = "stall"
	// Slow sends each blob 64 KiB every 200 ms (320 KiB/s): bytes keep
	// flowing, slowly.
	Slow Mode = "slow"
)

// Proxy is a plain-HTTP proxy on loopback in front of a registry that
// serves the bodies of blob GETs as its Mode says (manifests and other
// requests pass). Its Host (127.0.0.1:PORT) is a registry name needing no
// configuration (containerd uses plain HTTP for localhost).
type Proxy struct {
	// URL is http://Host.
	URL  string
	Host string
	mode atomic.Value
}

// NewProxy serves a Proxy in front of target (a registry's URL()) in
// mode until t's cleanup.
func NewProxy(t testing.TB, target string, mode Mode) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{}
	p.SetMode(mode)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || !strings.Contains(resp.Request.URL.Path, "/blobs/") {
			return nil
		}
		resp.Body = &throttled{ReadCloser: resp.Body, mode: p.Mode(), done: resp.Request.Context().Done()}
		return nil
	}
	s := httptest.NewServer(rp)
	t.Cleanup(s.Close)
	p.URL = s.URL
	p.Host = strings.TrimPrefix(s.URL, "http://")
	return p
}

// SetMode changes what the proxy does with the blobs asked for from now.
func (p *Proxy) SetMode(m Mode) { p.mode.Store(m) }

// Mode is the proxy's current mode.
func (p *Proxy) Mode() Mode { m, _ := p.mode.Load().(Mode); return m }

type throttled struct {
	io.ReadCloser
	mode Mode
	done <-chan struct{}
	sent int
}

func (r *throttled) Read(b []byte) (int, error) {
	const chunk = 64 << 10
	if r.sent >= chunk {
		switch r.mode {
		case Stall:
			<-r.done
			return 0, io.ErrUnexpectedEOF
		case Slow:
			select {
			case <-r.done:
				return 0, io.ErrUnexpectedEOF
			case <-time.After(200 * time.Millisecond):
			}
			r.sent = 0
		}
	}
	n, err := r.ReadCloser.Read(b[:min(len(b), chunk-r.sent)])
	r.sent += n
	return n, err
}
