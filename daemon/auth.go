package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/auth"
	"github.com/podvisor/podvisor/internal/trust"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/podvisor/podvisor/mirror"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// The values of --authorization-mode.
const (
	// AuthorizationWebhook asks the apiserver (SubjectAccessReview), as
	// kubelet's Webhook.
	AuthorizationWebhook = "Webhook"
	// AuthorizationAlwaysAllow allows every authenticated client, as
	// kubelet's AlwaysAllow.
	AuthorizationAlwaysAllow = "AlwaysAllow"
	// AuthorizationPolicy reads --authorization-policy-file: podvisor's,
	// for a box without an apiserver.
	AuthorizationPolicy = "Policy"
)

func (c *Config) addAuthFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.AuthorizationMode, "authorization-mode", c.AuthorizationMode, "who may do what on --tls-bind-address: Webhook (a SubjectAccessReview to the --kubeconfig apiserver per request, as kubelet's), AlwaysAllow (every authenticated client), or Policy (--authorization-policy-file) (default: Webhook with --kubeconfig, else Policy)")
	fs.StringVar(&c.AuthorizationPolicyFile, "authorization-policy-file", c.AuthorizationPolicyFile, "with --authorization-mode Policy: the YAML file of the subjects (certificate CN and/or O) that may get (read) and create (exec, attach, port-forward, restart) (none: nobody may)")
	fs.BoolVar(&c.AuthenticationTokenWebhook, "authentication-token-webhook", c.AuthenticationTokenWebhook, "on --tls-bind-address, also take bearer tokens, checked by a TokenReview to the --kubeconfig apiserver (a client certificate is then asked for, not required)")
	fs.DurationVar(&c.AuthenticationTokenWebhookCacheTTL, "authentication-token-webhook-cache-ttl", c.AuthenticationTokenWebhookCacheTTL, "how long a TokenReview's answer is cached")
	fs.DurationVar(&c.AuthorizationWebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", c.AuthorizationWebhookCacheAuthorizedTTL, "how long a SubjectAccessReview's allowed answer is cached")
	fs.DurationVar(&c.AuthorizationWebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", c.AuthorizationWebhookCacheUnauthorizedTTL, "how long a SubjectAccessReview's denied answer is cached")
	fs.BoolVar(&c.EnableProfilingHandler, "enable-profiling-handler", c.EnableProfilingHandler, "serve /debug/pprof on --tls-bind-address too, to whom may get nodes/proxy (the unix socket always serves it, to root)")
}

func init() {
	fieldChecks["authorization-mode"] = func(c *Config) error {
		switch c.AuthorizationMode {
		case "", AuthorizationWebhook, AuthorizationAlwaysAllow, AuthorizationPolicy:
			return nil
		}
		return fmt.Errorf("%q: want %s, %s or %s", c.AuthorizationMode, AuthorizationWebhook, AuthorizationAlwaysAllow, AuthorizationPolicy)
	}
	for flag, d := range map[string]func(c *Config) time.Duration{
		"authentication-token-webhook-cache-ttl":       func(c *Config) time.Duration { return c.AuthenticationTokenWebhookCacheTTL },
		"authorization-webhook-cache-authorized-ttl":   func(c *Config) time.Duration { return c.AuthorizationWebhookCacheAuthorizedTTL },
		"authorization-webhook-cache-unauthorized-ttl": func(c *Config) time.Duration { return c.AuthorizationWebhookCacheUnauthorizedTTL },
	} {
		fieldChecks[flag] = func(c *Config) error {
			if d(c) < 0 {
				return fmt.Errorf("%s: must not be negative (0: no cache)", d(c))
			}
			return nil
		}
	}
}

// authorizationMode is --authorization-mode, its default resolved.
func (c *Config) authorizationMode() string {
	switch {
	case c.AuthorizationMode != "":
		return c.AuthorizationMode
	case c.Kubeconfig != "":
		return AuthorizationWebhook
	}
	return AuthorizationPolicy
}

// validateAuth checks the flags together, with --tls-bind-address only:
// the webhooks need --kubeconfig, the policy file is read (and must be
// right), and a client CA that is the cluster's is refused unless the
// apiserver authorizes.
func (c *Config) validateAuth() []error {
	if c.TLSBindAddress == "" {
		return nil
	}
	var errs []error
	mode := c.authorizationMode()
	if mode == AuthorizationWebhook && c.Kubeconfig == "" {
		errs = append(errs, errors.New("--authorization-mode Webhook needs --kubeconfig: its apiserver answers the SubjectAccessReviews"))
	}
	if c.AuthenticationTokenWebhook && c.Kubeconfig == "" {
		errs = append(errs, errors.New("--authentication-token-webhook needs --kubeconfig: its apiserver answers the TokenReviews"))
	}
	if mode == AuthorizationAlwaysAllow && c.AuthenticationTokenWebhook {
		errs = append(errs, errors.New("--authorization-mode AlwaysAllow with --authentication-token-webhook: every token the apiserver vouches for (every service account of every namespace, every node) "+
			"could exec into this node's pods, etcd's and kube-apiserver's included. Use --authorization-mode Webhook (the apiserver's RBAC decides for each request), "+
			"or Policy with an --authorization-policy-file naming the users or groups allowed (user: alice, group: ops)"))
	}
	if c.AuthorizationPolicyFile != "" && mode != AuthorizationPolicy {
		errs = append(errs, fmt.Errorf("--authorization-policy-file is read with --authorization-mode Policy only, not %s", mode))
	}
	if mode == AuthorizationPolicy && c.AuthorizationPolicyFile != "" {
		if _, err := auth.LoadTrustedPolicy(c.AuthorizationPolicyFile, trustedUID()); err != nil {
			errs = append(errs, fmt.Errorf("--authorization-policy-file: %w", err))
		}
	}
	if c.Kubeconfig != "" && (mode == AuthorizationWebhook || c.AuthenticationTokenWebhook) {
		// Whoever can change the kubeconfig chooses the apiserver that
		// answers the reviews.
		if ps, err := trust.CheckFile(c.Kubeconfig, trustedUID()); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
		} else if len(ps) > 0 {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w (its apiserver decides who may use --tls-bind-address)", &trust.UntrustedError{Path: c.Kubeconfig, Problems: ps}))
		}
	}
	if c.ClientCAFile != "" {
		// A file that is not there yet is ListenTLS's to report.
		if _, err := c.loadClientCA(mode)(c.ClientCAFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errs
}

// maxClientCAFile bounds the client CA file read.
const maxClientCAFile = 4 << 20

// trustedUID is the user besides root whose files the auth files may be:
// podvisor's own (root, in production; the test's user in unit tests).
func trustedUID() int { return os.Geteuid() }

// loadClientCA reads the client CA file for the TLS port, at start and at
// each reload: from a descriptor checked as root's (trust.ReadTrusted),
// and, unless the apiserver authorizes, unrelated to the kubeconfig's
// cluster CA (auth.CheckClientCAData).
func (c *Config) loadClientCA(mode string) func(path string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		b, err := trust.ReadTrusted(path, trustedUID(), maxClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		if mode != AuthorizationWebhook {
			if err := auth.CheckClientCAData(path, b, c.Kubeconfig, mode); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
}

// authFileProblems returns why the files that configure podvisor's
// credentials and registries (the kubeconfig, the node's registry
// credentials, the hosts.toml directories) are not root's alone; each
// says what the file is. The client CA, the policy file and a kubeconfig
// the reviews use are refused by Validate; these are warned about.
func (c *Config) authFileProblems() []string {
	var out []string
	add := func(what, path string, ps []trust.Problem, err error) {
		if err != nil {
			out = append(out, fmt.Sprintf("%s %s: %v", what, path, err))
			return
		}
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s %s: %s", what, path, p))
		}
	}
	uid := trustedUID()
	if c.Kubeconfig != "" {
		ps, err := trust.CheckFile(c.Kubeconfig, uid)
		add("--kubeconfig", c.Kubeconfig, ps, err)
	}
	for _, f := range c.credentialsFiles() {
		ps, err := trust.CheckFile(f, uid)
		add("registry credentials", f, ps, err)
	}
	if c.RegistryConfigDir != "" {
		ps, err := trust.CheckDir(c.RegistryConfigDir, uid)
		add("--registry-config-dir", c.RegistryConfigDir, ps, err)
		hosts, _ := filepath.Glob(filepath.Join(c.RegistryConfigDir, "*", "hosts.toml"))
		for _, h := range hosts {
			ps, err := trust.CheckDir(filepath.Dir(h), uid)
			add("hosts.toml directory", filepath.Dir(h), ps, err)
			ps, err = trust.CheckFile(h, uid)
			add("hosts.toml", h, ps, err)
		}
	}
	return out
}

// WarnUntrustedAuthFiles logs authFileProblems, one warning each: run
// calls it at start.
func (c *Config) WarnUntrustedAuthFiles(log *slog.Logger) {
	for _, p := range c.authFileProblems() {
		log.Warn("a file that configures credentials or registries can be changed by users other than root", "problem", p)
	}
}

// remoteAPIFor is remoteAPI with its filter: the requests to node's TLS
// port authenticated and authorized as the flags say. Validate has
// checked them.
//
// clientCert, when set, is the rotated client certificate (daemon/certs.go)
// the reviews present in place of the kubeconfig's own.
func (c *Config) remoteAPIFor(node string, clientCert func() *tls.Certificate, log *slog.Logger) (*api.TLSConfig, error) {
	t := c.remoteAPI()
	if t == nil {
		return nil, nil
	}
	restConfig := func(path string) (*rest.Config, error) {
		return mirror.RESTConfig(path, "podvisor/"+version.Version+" ("+node+")", clientCert)
	}
	t.LoadClientCA = c.loadClientCA(c.authorizationMode())
	client := auth.KubeconfigClient(c.Kubeconfig, restConfig)
	authn := auth.Union{auth.Certificates{}}
	if c.AuthenticationTokenWebhook {
		authn = append(authn, &auth.TokenReviews{Client: client, TTL: c.AuthenticationTokenWebhookCacheTTL})
		t.ClientTokens = true
	}
	var authz auth.Authorizer
	switch mode := c.authorizationMode(); mode {
	case AuthorizationWebhook:
		authz = &auth.SubjectAccessReviews{Client: client, AllowedTTL: c.AuthorizationWebhookCacheAuthorizedTTL, DeniedTTL: c.AuthorizationWebhookCacheUnauthorizedTTL}
	case AuthorizationAlwaysAllow:
		log.Warn("remote API: --authorization-mode AlwaysAllow: every client with a certificate from --client-ca-file may exec into every pod", "client-ca-file", c.ClientCAFile)
		authz = auth.AlwaysAllow{}
	default:
		p := &auth.Policy{}
		if c.AuthorizationPolicyFile == "" {
			log.Warn("remote API: --authorization-mode Policy without --authorization-policy-file: every request on --tls-bind-address is forbidden")
		} else {
			var err error
			if p, err = auth.LoadTrustedPolicy(c.AuthorizationPolicyFile, trustedUID()); err != nil {
				return nil, fmt.Errorf("--authorization-policy-file: %w", err)
			}
		}
		authz = p
	}
	f, err := auth.NewFilter(auth.Options{Authenticator: authn, Authorizer: authz, NodeName: node, Profiling: c.EnableProfilingHandler, Log: log.With("component", "remote-api")})
	if err != nil {
		return nil, err
	}
	t.Filter = func(h http.Handler) http.Handler { return f.Wrap(h) }
	return t, nil
}
