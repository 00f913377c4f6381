package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeRestarter records restarts and answers with err.
type fakeRestarter struct {
	got []string
	err error
}

func (f *fakeRestarter) Restart(_ context.Context, uid types.UID, container string) error {
	f.got = append(f.got, string(uid)+"/"+container)
	return f.err
}

func TestRestartEndpoint(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	st := status.NewStore(nil)
	st.SetPod(phased("web", v1.PodRunning))
	other := phased("web", v1.PodRunning)
	other.Namespace, other.UID = "kube-system", "uid-web-2"
	st.SetPod(other)
	st.SetPod(phased("db", v1.PodRunning))
	r := &fakeRestarter{}
	serveOpts(t, Options{Socket: sock, Store: st, Restarter: r})
	c := NewClient(sock)
	ctx := t.Context()

	msg, err := c.Restart(ctx, "db", "")
	if err != nil || msg != "pod/db-node1 restarted" || r.got[0] != "uid-db/" {
		t.Errorf("restart db: %q %v %v", msg, err, r.got)
	}
	msg, err = c.Restart(ctx, "default/web", "app")
	if err != nil || msg != "container app of pod/web-node1 restarted" || r.got[1] != "uid-web/app" {
		t.Errorf("restart -c app: %q %v %v", msg, err, r.got)
	}
	if _, err := c.Restart(ctx, "web", ""); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "default/web-node1, kube-system/web-node1") {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := c.Restart(ctx, "nope", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("not found: %v", err)
	}
	for _, tc := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("pod default/db-node1: it is terminating: %w", ErrRestartRefused), http.StatusConflict},
		{fmt.Errorf("container %q is not in the pod: %w", "x", ErrNoContainer), http.StatusUnprocessableEntity},
		{fmt.Errorf("gone: %w", ErrNotFound), http.StatusNotFound},
		{errors.New("boom"), http.StatusInternalServerError},
	} {
		r.err = tc.err
		_, err := c.Restart(ctx, "db", "")
		var ae *APIError
		if !errors.As(err, &ae) || ae.Code != tc.code || !strings.Contains(ae.Message, tc.err.Error()) {
			t.Errorf("%v: got %v, want code %d", tc.err, err, tc.code)
		}
	}
}

// Every other write is refused: the API is read only but for restart.
func TestRestartOnlyWrite(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	st := status.NewStore(nil)
	st.SetPod(phased("db", v1.PodRunning))
	serveOpts(t, Options{Socket: sock, Store: st, Restarter: &fakeRestarter{}})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	for _, m := range []struct{ method, path string }{
		{"POST", "/pods"}, {"DELETE", "/pods/db"}, {"PUT", "/pods/db/restart"}, {"POST", "/events"}, {"POST", "/pods/db"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), m.method, "http://podvisor"+m.path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want 405", m.method, m.path, resp.StatusCode)
		}
	}
	// Without a Restarter there is no write at all.
	sock2 := filepath.Join(t.TempDir(), "api.sock")
	serveOpts(t, Options{Socket: sock2, Store: st})
	if _, err := NewClient(sock2).Restart(t.Context(), "db", ""); err == nil || !strings.Contains(err.Error(), "read only") {
		t.Errorf("restart without a Restarter: %v", err)
	}
}
