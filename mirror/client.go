package mirror

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"

	"github.com/podvisor/podvisor/internal/kube"
)

// client is a clientset and what belongs to its connection.
type client struct {
	cs       kube.Interface
	closeAll func()      // closes every connection; nil for Options.Client
	changed  func() bool // whether the kubeconfig file changed; nil for Options.Client
	// certChanged says whether Options.ClientCertificate returns another
	// certificate than at the last call; nil: not in use.
	certChanged func() bool
}

// connect returns Options.Client, or a client built from the kubeconfig
// file as it is now.
func (m *Mirror) connect() (*client, error) {
	if m.opts.Client != nil {
		return &client{cs: m.opts.Client}, nil
	}
	path := m.opts.Kubeconfig
	sum, err := fileSum(path)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	cfg, err := restConfig(path, m.userAgent())
	if err != nil {
		return nil, err
	}
	d := connrotation.NewDialer((&net.Dialer{Timeout: m.timeout, KeepAlive: 30 * time.Second}).DialContext)
	var certChanged func() bool
	if get := m.opts.ClientCertificate; get != nil && (len(cfg.CertData) > 0 || cfg.CertFile != "") {
		if certChanged, err = rotatingCert(cfg, get, d); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
	} else {
		cfg.Dial = d.DialContext
	}
	cs, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return &client{
		cs:       cs,
		closeAll: d.CloseAll,
		changed: func() bool {
			now, err := fileSum(path)
			return err == nil && !bytes.Equal(now, sum)
		},
		certChanged: certChanged,
	}, nil
}

// rotatingCert makes cfg present get's certificate instead of its own, as
// kubelet's certificate transport (pkg/kubelet/certificate/transport.go):
// its own transport asks get at each handshake and dials through d, whose
// connections the session closes when changed reports a new certificate.
// Without a certificate yet there is nothing to connect with.
func rotatingCert(cfg *rest.Config, get func() *tls.Certificate, d *connrotation.Dialer) (changed func() bool, err error) {
	last := get()
	if last == nil {
		return nil, errors.New("no client certificate yet (--rotate-certificates: the certificate manager has none)")
	}
	// The kubeconfig's own pair is not read: it may not exist yet.
	own := rest.CopyConfig(cfg)
	own.CertFile, own.KeyFile, own.CertData, own.KeyData = "", "", nil, nil
	tlsCfg, err := rest.TLSConfigFor(own)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{}
	}
	tlsCfg.Certificates = nil
	tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := get(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil
	}
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
		DialContext:         d.DialContext,
	})
	// The transport enforces them now; rest refuses both.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	var mu sync.Mutex
	return func() bool {
		cur := get()
		mu.Lock()
		defer mu.Unlock()
		if cur == nil || cur == last {
			return false
		}
		last = cur
		return true
	}, nil
}

// restConfig loads a kubeconfig file as kubectl does (its current context,
// paths relative to the file) and sets kubelet's client settings.
//
// Certificates and keys named as files (kubeadm's kubelet.conf names
// /var/lib/kubelet/pki/kubelet-client-current.pem) are not copied into the
// config: client-go then reads them again for each new connection (at most
// once a second) and, when they change, closes its connections so the next
// ones use the new pair (k8s.io/client-go/transport cert rotation). Certificates
// embedded in the file change with the file, which the session watches.
//
// Timeout stays 0: it would cut watches short. Every other request is
// bounded by the caller's context instead.
func restConfig(path, userAgent string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = 50, 100 // kubelet's kubeAPIQPS and kubeAPIBurst
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.Timeout = 0
	return cfg, nil
}

func (m *Mirror) userAgent() string {
	return "podvisor/" + m.opts.Version + " (" + m.opts.NodeName + ")"
}

func fileSum(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := sha256.Sum256(b)
	return s[:], nil
}

// RESTConfig is the client configuration the mirror builds from the
// kubeconfig file at path (restConfig), with userAgent: for the TLS port's
// TokenReviews and SubjectAccessReviews, which speak as the node does.
// With cert (a rotated client certificate, Options.ClientCertificate) and a
// kubeconfig that authenticates with a certificate, requests present
// cert's certificate instead, and the first request after a rotation
// closes the connections made with the one before (short requests only:
// no watch is cut).
func RESTConfig(path, userAgent string, cert func() *tls.Certificate) (*rest.Config, error) {
	cfg, err := restConfig(path, userAgent)
	if err != nil || cert == nil || (len(cfg.CertData) == 0 && cfg.CertFile == "") {
		return cfg, err
	}
	d := connrotation.NewDialer((&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	changed, err := rotatingCert(cfg, cert, d)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if changed() {
				d.CloseAll()
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg, nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
