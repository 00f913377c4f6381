package daemon

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestValidateAuth: the TLS port's authorization flags are refused alone
// and together, naming the flag and why.
func TestValidateAuth(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: podvisor.io/v1alpha1\nkind: AuthorizationPolicy\nexec: []\n"), 0o600)
	tls := func(c *Config) {
		c.TLSBindAddress, c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile = "127.0.0.1:10250", "/c", "/k", "/ca"
	}
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"mode", func(c *Config) { c.AuthorizationMode = "RBAC" }, `--authorization-mode: "RBAC": want Webhook, AlwaysAllow or Policy`},
		{"ttl", func(c *Config) { c.AuthorizationWebhookCacheUnauthorizedTTL = -time.Second }, "--authorization-webhook-cache-unauthorized-ttl: -1s: must not be negative"},
		{"webhook without kubeconfig", func(c *Config) { tls(c); c.AuthorizationMode = "Webhook" }, "--authorization-mode Webhook needs --kubeconfig"},
		{"tokens without kubeconfig", func(c *Config) { tls(c); c.AuthenticationTokenWebhook = true }, "--authentication-token-webhook needs --kubeconfig"},
		{"policy file with webhook", func(c *Config) { tls(c); c.Kubeconfig = "/kc"; c.AuthorizationPolicyFile = bad }, "--authorization-policy-file is read with --authorization-mode Policy only, not Webhook"},
		{"bad policy", func(c *Config) { tls(c); c.AuthorizationPolicyFile = bad }, "--authorization-policy-file: " + bad + ":3: exec: unknown field"},
	} {
		c := Default()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct{ kubeconfig, mode, want string }{
		{"", "", AuthorizationPolicy},
		{"/kc", "", AuthorizationWebhook},
		{"/kc", "AlwaysAllow", AuthorizationAlwaysAllow},
	} {
		c := Config{Kubeconfig: tc.kubeconfig, AuthorizationMode: tc.mode}
		if got := c.authorizationMode(); got != tc.want {
			t.Errorf("kubeconfig %q mode %q: %s, want %s", tc.kubeconfig, tc.mode, got, tc.want)
		}
	}
}

// The default without --kubeconfig is the local policy: without a file,
// every request is forbidden; AlwaysAllow lets a certificate's user in;
// tokens make the certificate optional.
func TestRemoteAPIFor(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	c := Default()
	c.TLSBindAddress = "127.0.0.1:0"
	r, err := c.remoteAPIFor("node1", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientTokens {
		t.Error("certificates only, yet ClientTokens")
	}
	w := httptest.NewRecorder()
	r.Filter(ok).ServeHTTP(w, httptest.NewRequest("GET", "/pods", nil))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("anonymous: %d, want 401", w.Code)
	}
	c.Kubeconfig = filepath.Join(t.TempDir(), "missing.conf")
	c.AuthenticationTokenWebhook = true
	if r, err = c.remoteAPIFor("node1", nil, log); err != nil || !r.ClientTokens {
		t.Fatalf("tokens: %+v %v", r, err)
	}
	// A token while the kubeconfig does not exist: no review, 401.
	req := httptest.NewRequest("GET", "/pods", nil)
	req.Header.Set("Authorization", "Bearer abc")
	w = httptest.NewRecorder()
	r.Filter(ok).ServeHTTP(w, req)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("token without an apiserver: %d, want 401", w.Code)
	}
}
