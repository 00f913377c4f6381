package containerd

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestNodeCredentials(t *testing.T) {
	dir := t.TempDir()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cfg := fmt.Sprintf(`{"auths": {
		"https://index.docker.io/v1/": {"auth": %q},
		"registry.example.com": {"username": "host", "password": "h"},
		"registry.example.com/team": {"auth": %q},
		"*.corp.example:5000": {"identitytoken": "tok"},
		"127.0.0.1:5000": {"auth": %q}
	}}`, b64("hub:x"), b64("team:t"), b64("local:l"))
	second := filepath.Join(dir, "kubelet.json")
	if err := os.WriteFile(second, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := NodeCredentials(filepath.Join(dir, "missing.json"), second)
	for _, c := range []struct{ image, host, user, secret string }{
		{"docker.io/library/busybox:1", "registry-1.docker.io", "hub", "x"},
		{"registry.example.com/app:1", "registry.example.com", "host", "h"},
		{"registry.example.com/team/app:1", "registry.example.com", "team", "t"},
		{"registry.example.com/teamx/app:1", "registry.example.com", "host", "h"},
		{"a.corp.example:5000/app:1", "a.corp.example:5000", "", "tok"},
		{"a.corp.example/app:1", "a.corp.example", "", ""},               // port differs
		{"a.b.corp.example:5000/app:1", "a.b.corp.example:5000", "", ""}, // parts differ
		// Through a mirror, the mirror's host is matched.
		{"registry.test/app:1", "127.0.0.1:5000", "local", "l"},
		{"other.example/app:1", "other.example", "", ""},
	} {
		user, secret, err := creds(context.Background(), c.image, c.host)
		if err != nil || user != c.user || secret != c.secret {
			t.Errorf("%s from %s = %q %q %v, want %q %q", c.image, c.host, user, secret, err, c.user, c.secret)
		}
	}
	if u, s, err := NodeCredentials(filepath.Join(dir, "none"))(context.Background(), "x.example/a", "x.example"); u != "" || s != "" || err != nil {
		t.Errorf("no file = %q %q %v", u, s, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o600)
	if _, _, err := NodeCredentials(bad)(context.Background(), "x.example/a", "x.example"); err == nil {
		t.Error("a malformed file gave no error")
	}
}

func TestIsNetworkError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{&net.OpError{Op: "dial", Err: errors.New("no route to host")}, true},
		{&net.DNSError{Err: "no such host", Name: "x"}, true},
		{fmt.Errorf("pull: %w", ErrPullStalled), true},
		{errors.New("unexpected status from HEAD request to https://r/v2/a/manifests/1: 401 Unauthorized"), false},
		{errors.New("docker.io/library/x:1: not found"), false},
	} {
		if got := isNetworkError(c.err); got != c.want {
			t.Errorf("isNetworkError(%v) = %v", c.err, got)
		}
	}
}

// The progress deadline counts only while the pull waits on its registry
// (resolving, or a fetch open): containerd unpacking after the last byte
// is not a stall.
func TestWatchProgress(t *testing.T) {
	r := &Runtime{opts: Options{PullProgressDeadline: 200 * time.Millisecond, PullReportInterval: time.Hour}}
	p := &progress{}
	p.last.Store(time.Now().UnixNano())
	p.fetched.Store(true) // fetched, none open: unpacking
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go r.watchProgress(p, done, cancel, func(int64, time.Duration) {})
	select {
	case <-ctx.Done():
		t.Fatalf("cut while unpacking: %v", context.Cause(ctx))
	case <-time.After(time.Second):
	}
	p.open.Add(1) // a fetch that receives nothing
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), ErrPullStalled) {
			t.Errorf("cause %v", context.Cause(ctx))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled fetch was not cut")
	}
}
