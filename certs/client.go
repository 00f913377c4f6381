package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podvisor/podvisor/internal/atomicfile"
	"github.com/podvisor/podvisor/internal/kube"
)

// Options configure Client and Server.
type Options struct {
	// Dir is the cert dir (--cert-dir).
	Dir Dir
	// Kubeconfig is --kubeconfig: the apiserver and the credentials the
	// certificates are requested with.
	Kubeconfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig: credentials (a
	// bootstrap token) to request the first client certificate with when
	// Kubeconfig is missing or its certificate expired; "" for none.
	BootstrapKubeconfig string
	// NodeName is the node: the certificate is system:node:<NodeName>.
	NodeName string
	// UserAgent is sent with every request.
	UserAgent string
	// Timeout bounds each request; default 10 s.
	Timeout time.Duration
	// RetryPeriod is the wait before reading the kubeconfigs again while
	// they are missing or invalid; default 2 s.
	RetryPeriod time.Duration
	// Log receives what happens; nil discards.
	Log *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Client is the node's rotated client certificate (--rotate-certificates).
type Client struct {
	o Options
	// clientFor, when set, replaces clientset (tests).
	clientFor func(current *tls.Certificate) (kube.Interface, error)

	mu  sync.Mutex
	mgr *manager // nil until Run has read a kubeconfig
}

// NewClient checks o; nothing is read before Run.
func NewClient(o Options) (*Client, error) {
	switch {
	case o.Dir == "":
		return nil, errors.New("client certificate: no --cert-dir")
	case o.Kubeconfig == "":
		return nil, errors.New("client certificate: no --kubeconfig")
	case o.NodeName == "":
		return nil, errors.New("client certificate: no node name")
	}
	return &Client{o: o.withDefaults()}, nil
}

// Current is the client certificate to present: nil while there is none
// (no kubeconfig yet, bootstrapping, expired) or while the kubeconfig
// authenticates otherwise.
func (c *Client) Current() *tls.Certificate {
	c.mu.Lock()
	m := c.mgr
	c.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.Current()
}

// Run waits for a usable kubeconfig (or bootstraps one), then rotates the
// certificate until ctx ends. It returns nil at the end of ctx.
func (c *Client) Run(ctx context.Context) error {
	log := c.o.Log
	var last string
	for {
		m, err := c.start()
		if err == nil {
			if m == nil {
				log.Info("the kubeconfig authenticates without a client certificate: no certificate to rotate", "kubeconfig", c.o.Kubeconfig)
				return nil
			}
			c.mu.Lock()
			c.mgr = m
			c.mu.Unlock()
			log.Info("rotating the client certificate", "store", c.o.Dir.ClientCurrent())
			m.run(ctx)
			return nil
		}
		if err.Error() != last {
			log.Warn("client certificate: waiting for a usable kubeconfig", "err", err, "retry", c.o.RetryPeriod)
			last = err.Error()
		}
		t := time.NewTimer(c.o.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// start bootstraps the kubeconfig if it must, reads it and returns a
// manager (not started); nil without error when the kubeconfig holds no
// client certificate.
func (c *Client) start() (*manager, error) {
	var cfg *rest.Config
	var err error
	if c.o.BootstrapKubeconfig != "" {
		// The kubeconfig it writes names a pair not issued yet, which
		// clientcmd would refuse to load: its config is made here.
		if cfg, err = c.bootstrapKubeconfig(time.Now()); err != nil {
			return nil, err
		}
	}
	if cfg == nil {
		if cfg, err = LoadKubeconfig(c.o.Kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
	}
	if !HasClientCertificate(cfg) {
		return nil, nil
	}
	initCert, initKey, err := initialPair(cfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", c.o.Kubeconfig, err)
	}
	if err := os.MkdirAll(string(c.o.Dir), 0o700); err != nil {
		return nil, fmt.Errorf("--cert-dir: %w", err)
	}
	// As kubelet's: a pair the kubeconfig names in files (kubeadm's
	// kubelet.conf after kubelet-finalize names the store's own link) is
	// the store's when it has none.
	pairFile, keyFile := cfg.CertFile, cfg.KeyFile
	if pairFile == c.o.Dir.ClientCurrent() {
		pairFile, keyFile = "", ""
	}
	store, err := newFileStore(c.o.Dir, ClientPrefix, pairFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--cert-dir %s: %w", c.o.Dir, err)
	}
	clientFor := c.clientFor
	if clientFor == nil {
		clientFor = c.clientset
	}
	return newManager(managerConfig{
		store: store,
		// The kubeconfig's pair when the store has none: kubelet's
		// initial certificate, replaced at once by one requested with it.
		initCertPEM: initCert,
		initKeyPEM:  initKey,
		template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName:   "system:node:" + c.o.NodeName,
			Organization: []string{"system:nodes"},
		}},
		signer:  certificatesv1.KubeAPIServerClientKubeletSignerName,
		usage:   certificatesv1.UsageClientAuth,
		client:  clientFor,
		timeout: c.o.Timeout,
		log:     c.o.Log.With("certificate", "client"),
	})
}

// clientset is the manager's client for the CSRs: the kubeconfig's
// apiserver with the current certificate, or the bootstrap kubeconfig's
// credentials while there is none (kubelet's buildClientCertificateManager).
// Both files are read again at each rotation.
func (c *Client) clientset(current *tls.Certificate) (kube.Interface, error) {
	var cfg *rest.Config
	var err error
	switch {
	case current == nil && c.o.BootstrapKubeconfig != "":
		if cfg, err = LoadKubeconfig(c.o.BootstrapKubeconfig); err != nil {
			return nil, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
		}
	case current == nil:
		if cfg, err = LoadKubeconfig(c.o.Kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
	default:
		if cfg, err = LoadKubeconfig(c.o.Kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		if cfg, err = presenting(rest.AnonymousClientConfig(cfg), func() *tls.Certificate {
			// The newest: a request waiting for its CSR outlives a rotation.
			if cur := c.Current(); cur != nil {
				return cur
			}
			return current
		}); err != nil {
			return nil, err
		}
	}
	cfg.UserAgent = c.o.UserAgent
	cfg.Timeout = 0 // a watch is not cut short; every other request is
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return bounded{rt, c.o.Timeout} })
	cs, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// bootstrapKubeconfig writes the kubeconfig from the bootstrap one,
// pointing at the cert dir's current pair, when the kubeconfig is missing
// or its certificate is not valid at now, and returns what it wrote
// (kubelet's LoadClientConfig); nil when the kubeconfig is valid.
func (c *Client) bootstrapKubeconfig(now time.Time) (*rest.Config, error) {
	ok, why := kubeconfigValid(c.o.Kubeconfig, now)
	if ok {
		return nil, nil
	}
	boot, err := LoadKubeconfig(c.o.BootstrapKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
	}
	pemPath := c.o.Dir.ClientCurrent()
	b, err := BootstrappedKubeconfig(boot, pemPath)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(c.o.Kubeconfig, b, 0o600); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	c.o.Log.Info("bootstrapping: the kubeconfig names the certificate to request with --bootstrap-kubeconfig", "kubeconfig", c.o.Kubeconfig, "certificate", pemPath, "reason", why)
	cfg := rest.AnonymousClientConfig(boot)
	cfg.CertFile, cfg.KeyFile = pemPath, pemPath
	return cfg, nil
}

// BootstrappedKubeconfig is the kubeconfig kubelet writes after a
// bootstrap: boot's apiserver and CA, the client pair pem (certificate and
// key in one file).
func BootstrappedKubeconfig(boot *rest.Config, pem string) ([]byte, error) {
	ca := boot.CAData
	if boot.CAFile != "" {
		ca = nil
	}
	return clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server:                   boot.Host,
			InsecureSkipTLSVerify:    boot.Insecure,
			CertificateAuthority:     boot.CAFile,
			CertificateAuthorityData: ca,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {
			ClientCertificate: pem,
			ClientKey:         pem,
		}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default",
		}},
		CurrentContext: "default-context",
	})
}

// kubeconfigValid says whether path is a kubeconfig with a client
// certificate valid at now; otherwise why not.
func kubeconfigValid(path string, now time.Time) (bool, string) {
	cfg, err := LoadKubeconfig(path)
	if err != nil {
		return false, err.Error()
	}
	leaf, err := ClientCertificate(cfg)
	if err != nil {
		return false, err.Error()
	}
	if leaf == nil {
		return false, "no client certificate in it"
	}
	if now.Before(leaf.NotBefore) || !now.Before(leaf.NotAfter) {
		return false, fmt.Sprintf("its client certificate is valid until %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return true, ""
}

// ClientCertificate is cfg's client certificate (embedded or in the file
// it names), the first of its PEM; nil when it has none.
func ClientCertificate(cfg *rest.Config) (*x509.Certificate, error) {
	certPEM := cfg.CertData
	if len(certPEM) == 0 && cfg.CertFile != "" {
		var err error
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			return nil, err
		}
	}
	if len(certPEM) == 0 {
		return nil, nil
	}
	return firstCert(certPEM)
}

// LoadKubeconfig reads a kubeconfig file as kubectl does (current context,
// paths relative to the file).
func LoadKubeconfig(path string) (*rest.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// HasClientCertificate says whether cfg authenticates with a client
// certificate (embedded or in files).
func HasClientCertificate(cfg *rest.Config) bool {
	return len(cfg.CertData) > 0 || cfg.CertFile != ""
}

// initialPair is the kubeconfig's embedded certificate and key, the
// manager's initial pair when its store is empty (kubelet's bootstrap
// certificate, kubeadm's kubelet.conf before kubelet-finalize). Files the
// kubeconfig names are the store's fallback instead.
func initialPair(cfg *rest.Config) (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM = cfg.CertData, cfg.KeyData
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, nil
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, nil, fmt.Errorf("client certificate and key: %w", err)
	}
	return certPEM, keyPEM, nil
}

func firstCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// presenting is cfg (without credentials) presenting get's certificate at
// each handshake.
func presenting(cfg *rest.Config, get func() *tls.Certificate) (*rest.Config, error) {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{}
	}
	tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return get(), nil }
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
	})
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return cfg, nil
}
