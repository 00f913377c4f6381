package auth

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// headerUser authenticates the X-User header; "error" is an error.
type headerUser struct{}

func (headerUser) Authenticate(r *http.Request) (*User, error) {
	switch name := r.Header.Get("X-User"); name {
	case "":
		return nil, nil
	case "error":
		return nil, errors.New("apiserver down")
	default:
		return &User{Name: name, Groups: []string{"g1"}, Method: "test"}, nil
	}
}

// table allows the "user verb subresource" it holds; "broken" errors.
type table map[string]bool

func (t table) Authorize(_ context.Context, a Attributes) (bool, string, error) {
	if a.User.Name == "broken" {
		return false, "", errors.New("timeout")
	}
	return t[a.User.Name+" "+a.Verb+" "+a.Subresource], "table", nil
}

func TestFilter(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	authz := table{"reader get proxy": true, "reader get pods": false, "lister get proxy": true, "admin create proxy": true, "admin get proxy": true}
	served := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++; w.Write([]byte("ok")) })
	newWrapped := func(profiling bool) http.Handler {
		f, err := NewFilter(Options{Authenticator: headerUser{}, Authorizer: authz, NodeName: "node1", Profiling: profiling, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		return f.Wrap(h)
	}
	wrapped := newWrapped(false)
	for _, tc := range []struct {
		user, method, target string
		code                 int
		body                 string
	}{
		{"", "GET", "/pods", 401, "Unauthorized"},
		{"error", "GET", "/pods", 401, "Unauthorized"},
		{"reader", "GET", "/pods", 200, "ok"}, // nodes/pods denied, nodes/proxy allowed
		{"reader", "GET", "/pods/web/log", 200, "ok"},
		{"reader", "POST", "/pods/web/exec?container=c&command=sh", 403, "Forbidden (user=reader, verb=create, resource=nodes, subresource=proxy)"},
		{"reader", "GET", "/exec/default/web/c", 403, "Forbidden (user=reader, verb=create, resource=nodes, subresource=proxy)"},
		{"reader", "GET", "/stats/summary", 403, "Forbidden (user=reader, verb=get, resource=nodes, subresource=stats)"},
		{"admin", "POST", "/pods/web/exec?container=c&command=sh", 200, "ok"},
		{"nobody", "GET", "/pods", 403, "Forbidden (user=nobody, verb=get, resource=nodes, subresource=pods)"},
		{"broken", "POST", "/pods/web/restart", 503, "Authorization error (user=broken, verb=create, resource=nodes, subresource=proxy)"},
		{"admin", "GET", "/debug/pprof/", 404, "404 page not found"},
		{"", "GET", "/debug/pprof/heap", 404, "404 page not found"},
	} {
		served = 0
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.user != "" {
			r.Header.Set("X-User", tc.user)
		}
		w := httptest.NewRecorder()
		wrapped.ServeHTTP(w, r)
		if w.Code != tc.code || strings.TrimSpace(w.Body.String()) != tc.body {
			t.Errorf("%s %s %s: %d %q, want %d %q", tc.user, tc.method, tc.target, w.Code, w.Body.String(), tc.code, tc.body)
		}
		if (served == 1) != (tc.code == 200) {
			t.Errorf("%s %s %s: handler ran %d times", tc.user, tc.method, tc.target, served)
		}
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/debug/pprof/", nil)
	r.Header.Set("X-User", "admin")
	newWrapped(true).ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("profiling on: %d", w.Code)
	}
	for _, want := range []string{
		`level=INFO msg="remote API session" action=exec pod=web container=c user=reader groups=[g1] authn=test decision=forbidden`,
		`level=INFO msg="remote API session" action=exec pod=web container=c user=admin groups=[g1] authn=test decision=allowed`,
		`level=INFO msg="remote API session" action=exec pod=web container=c namespace=default user=reader groups=[g1] authn=test decision=forbidden`,
		`level=INFO msg="remote API session" action=restart pod=web container="" user=broken groups=[g1] authn=test decision=error`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "action=log") || strings.Count(logs.String(), `msg="remote API session"`) != 4 {
		t.Errorf("want exactly the 4 sessions logged:\n%s", logs.String())
	}
}
