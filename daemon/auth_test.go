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
	everyone := filepath.Join(dir, "everyone.yaml")
	os.WriteFile(everyone, []byte("apiVersion: podvisor.io/v1alpha1\nkind: AuthorizationPolicy\ncreate:\n- group: system:serviceaccounts\n"), 0o600)
	openCA := filepath.Join(dir, "open-ca.crt")
	os.WriteFile(openCA, []byte("not read"), 0o664)
	os.Chmod(openCA, 0o664)
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
		{"AlwaysAllow with the token webhook", func(c *Config) {
			tls(c)
			c.Kubeconfig, c.AuthorizationMode, c.AuthenticationTokenWebhook = "/kc", "AlwaysAllow", true
		}, "--authorization-mode AlwaysAllow with --authentication-token-webhook: every token the apiserver vouches for (every service account of every namespace, every node) could exec into this node's pods"},
		{"policy naming every service account", func(c *Config) { tls(c); c.AuthorizationPolicyFile = everyone },
			"--authorization-policy-file: " + everyone + `:4: create[0].group: "system:serviceaccounts" is every service account of every namespace`},
		{"group-writable client CA", func(c *Config) { tls(c); c.ClientCAFile = openCA }, "--client-ca-file: " + openCA + " is not trusted: " + openCA + ": mode 0664 is group- or world-writable"},
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

// The files that configure credentials and registries are checked on
// their descriptors: a kubeconfig others can write, a credentials file
// reached through a link kept in a world-writable directory, and a
// hosts.toml directory others can write are each named.
func TestAuthFileProblems(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	os.WriteFile(kubeconfig, []byte("x"), 0o600)
	os.Chmod(kubeconfig, 0o620)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	creds := filepath.Join(dir, "config.json")
	os.WriteFile(creds, []byte("{}"), 0o600)
	link := filepath.Join(open, "creds.json")
	os.Symlink(creds, link)
	registries := filepath.Join(dir, "certs.d")
	host := filepath.Join(registries, "registry.example")
	os.MkdirAll(host, 0o755)
	os.Chmod(host, 0o775)
	os.WriteFile(filepath.Join(host, "hosts.toml"), []byte(""), 0o644)

	c := Default()
	c.Kubeconfig, c.ImageCredentialsFile, c.RegistryConfigDir = kubeconfig, link, registries
	got := strings.Join(c.authFileProblems(), "\n")
	for _, want := range []string{
		"--kubeconfig " + kubeconfig + ": " + kubeconfig + ": mode 0620 is group- or world-writable",
		"registry credentials " + link + ": " + open + ": mode 0777 is group- or world-writable (holds the symlink",
		"hosts.toml directory " + host + ": " + host + ": mode 0775 is group- or world-writable",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems:\n%s\nwant one with %q", got, want)
		}
	}
	c.Kubeconfig, c.ImageCredentialsFile, c.RegistryConfigDir = filepath.Join(dir, "missing"), creds, ""
	if got := c.authFileProblems(); len(got) != 0 {
		t.Errorf("private files: %q", got)
	}
}

// A --config file others can write is refused, naming it: it decides
// what podvisor runs as root.
func TestConfigFileTrust(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	p := filepath.Join(dir, "podvisor.yaml")
	os.WriteFile(p, []byte("apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\n"), 0o644)
	if _, _, err := readConfigFile(p, nil); err != nil {
		t.Fatalf("private file: %v", err)
	}
	os.Chmod(p, 0o666)
	if _, _, err := readConfigFile(p, nil); err == nil || !strings.Contains(err.Error(), "--config: "+p+" is not trusted") {
		t.Errorf("world-writable file: %v", err)
	}
}
