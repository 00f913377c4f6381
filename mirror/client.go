package mirror

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"
)

// client is a clientset and what belongs to its connection.
type client struct {
	cs       kubernetes.Interface
	closeAll func()      // closes every connection; nil for Options.Client
	changed  func() bool // whether the kubeconfig file changed; nil for Options.Client
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
	cfg.Dial = d.DialContext
	cs, err := kubernetes.NewForConfig(cfg)
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
func RESTConfig(path, userAgent string) (*rest.Config, error) {
	return restConfig(path, userAgent)
}
