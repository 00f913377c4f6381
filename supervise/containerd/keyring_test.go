package containerd

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	creds := NodeCredentials(nil, filepath.Join(dir, "missing.json"), second)
	for _, c := range []struct{ image, host, user, secret string }{
		{"docker.io/library/busybox:1", "registry-1.docker.io", "hub", "x"},
		{"registry.example.com/app:1", "registry.example.com", "host", "h"},
		{"registry.example.com/team/app:1", "registry.example.com", "team", "t"},
		{"registry.example.com/teamx/app:1", "registry.example.com", "host", "h"},
		{"a.corp.example:5000/app:1", "a.corp.example:5000", "", "tok"},
		{"a.corp.example/app:1", "a.corp.example", "", ""},               // port differs
		{"a.b.corp.example:5000/app:1", "a.b.corp.example:5000", "", ""}, // parts differ
		// Through a mirror, the mirror's host is matched, and the image's
		// own registry too (kubelet matches the image's name; containerd
		// sends what it found to the mirror).
		{"registry.test/app:1", "127.0.0.1:5000", "local", "l"},
		{"registry.example.com/team/app:1", "127.0.0.1:6000", "team", "t"},
		{"registry.example.com/app:1", "127.0.0.1:6000", "host", "h"},
		{"other.example/app:1", "127.0.0.1:6000", "", ""},
		{"other.example/app:1", "other.example", "", ""},
	} {
		got, err := creds(context.Background(), c.image, c.host)
		var user, secret string
		if len(got) > 0 {
			user, secret = got[0].User, got[0].Secret
		}
		if err != nil || user != c.user || secret != c.secret {
			t.Errorf("%s from %s = %q %q %v, want %q %q", c.image, c.host, user, secret, err, c.user, c.secret)
		}
	}
	// Every matching key is returned, the most specific first.
	if got, err := creds(context.Background(), "registry.example.com/team/app:1", "registry.example.com"); err != nil || len(got) != 2 || got[0] != (Credential{"team", "t"}) || got[1] != (Credential{"host", "h"}) {
		t.Errorf("all matches = %v, %v", got, err)
	}
	if got, err := NodeCredentials(nil, filepath.Join(dir, "none"))(context.Background(), "x.example/a", "x.example"); len(got) != 0 || err != nil {
		t.Errorf("no file = %v %v", got, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o600)
	if _, err := NodeCredentials(nil, bad)(context.Background(), "x.example/a", "x.example"); err == nil {
		t.Error("a malformed file gave no error")
	}
}

// A pod's imagePullSecrets: docker config types only, every matching key
// of every Secret by kubelet's order, before the node's; errors name the
// Secret, never a value.
func TestPullSecretCredentials(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	secret := func(name string, typ v1.SecretType, key, data string) *v1.Secret {
		return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ, Data: map[string][]byte{key: []byte(data)}}
	}
	json := secret("json", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey,
		fmt.Sprintf(`{"auths":{"reg.example:5000":{"auth":%q},"reg.example:5000/team":{"username":"team","password":"t"}}}`, b64("json:j")))
	legacy := secret("legacy", v1.SecretTypeDockercfg, v1.DockerConfigKey,
		fmt.Sprintf(`{"https://reg.example:5000/":{"auth":%q,"email":"a@b"}}`, b64("legacy:l")))
	opaque := secret("opaque", v1.SecretTypeOpaque, v1.DockerConfigJsonKey, fmt.Sprintf(`{"auths":{"reg.example:5000":{"auth":%q}}}`, b64("opaque:o")))
	creds, err := PullSecretCredentials([]*v1.Secret{legacy, opaque, json})
	if err != nil {
		t.Fatal(err)
	}
	node := Credentials(func(context.Context, string, string) ([]Credential, error) { return []Credential{{"node", "n"}}, nil })
	got, err := Chain(creds, nil, node)(context.Background(), "reg.example:5000/team/app:1", "reg.example:5000")
	want := []Credential{{"team", "t"}, {"legacy", "l"}, {"json", "j"}, {"node", "n"}}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("team image = %v, %v; want %v", got, err, want)
	}
	if got, err := creds(context.Background(), "other.example/app:1", "other.example"); len(got) != 0 || err != nil {
		t.Errorf("unmatched image = %v, %v", got, err)
	}
	if c, err := PullSecretCredentials([]*v1.Secret{opaque}); c != nil || err != nil {
		t.Errorf("an Opaque Secret gave credentials (%v)", err)
	}
	_, err = PullSecretCredentials([]*v1.Secret{secret("broken", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":"hunter2`)})
	if err == nil || !strings.Contains(err.Error(), `"broken"`) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a broken Secret = %v, want its name and no value", err)
	}
	bad, err := PullSecretCredentials([]*v1.Secret{secret("badauth", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"reg.example:5000":{"auth":"hunter2!"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad(context.Background(), "reg.example:5000/app", "reg.example:5000"); err == nil || !strings.Contains(err.Error(), `"badauth"`) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a bad auth = %v, want its Secret's name and no value", err)
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
