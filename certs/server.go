package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/podvisor/podvisor/internal/kube"
)

// Server is the serving certificate issued through the apiserver
// (--rotate-server-certificates, kubelet's serverTLSBootstrap).
type Server struct {
	mgr *manager
}

// ServerOptions are the names the serving certificate is requested for:
// the node's name and hostname, and its addresses (at least one, as
// kubelet requires).
type ServerOptions struct {
	DNSNames []string
	IPs      []net.IP
	// Client, when set, is the client certificate the requests are made
	// with; nil: the kubeconfig's own credentials.
	Client *Client
}

// NewServer returns the serving certificate's manager, not started: a
// CSR for system:node:<node> with signer kubernetes.io/kubelet-serving,
// stored as kubelet-server-current.pem once issued. The pair stored
// before is loaded now. ctx is not used: Run's ends the manager.
func NewServer(_ context.Context, o Options, so ServerOptions) (*Server, error) {
	o = o.withDefaults()
	if o.Dir == "" || o.Kubeconfig == "" || o.NodeName == "" {
		return nil, errors.New("serving certificate: --rotate-server-certificates needs --cert-dir, --kubeconfig and a node name")
	}
	if len(so.IPs) == 0 {
		return nil, errors.New("serving certificate: --rotate-server-certificates needs the node's IP (--node-ip)")
	}
	client := so.Client
	if client == nil {
		client = &Client{o: o}
	}
	return newServer(o, so, func(*tls.Certificate) (kube.Interface, error) {
		if so.Client != nil {
			cur := so.Client.Current()
			if cur == nil {
				return nil, errors.New("no client certificate yet")
			}
			return client.clientset(cur)
		}
		return client.clientset(nil)
	})
}

// newServer is NewServer requesting through clientFor.
func newServer(o Options, so ServerOptions, clientFor func(*tls.Certificate) (kube.Interface, error)) (*Server, error) {
	if err := os.MkdirAll(string(o.Dir), 0o700); err != nil {
		return nil, fmt.Errorf("--cert-dir: %w", err)
	}
	store, err := newFileStore(o.Dir, ServerPrefix, "", "")
	if err != nil {
		return nil, fmt.Errorf("--cert-dir %s: %w", o.Dir, err)
	}
	m, err := newManager(managerConfig{
		store: store,
		template: &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}},
			DNSNames:    so.DNSNames,
			IPAddresses: so.IPs,
		},
		signer:  certificatesv1.KubeletServingSignerName,
		usage:   certificatesv1.UsageServerAuth,
		client:  clientFor,
		timeout: o.Timeout,
		log:     o.Log.With("certificate", "serving"),
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	return &Server{mgr: m}, nil
}

// Run requests and rotates the certificate until ctx ends, and returns
// nil once the manager stopped.
func (s *Server) Run(ctx context.Context) error {
	s.mgr.run(ctx)
	return nil
}

// GetCertificate is the certificate to serve; an error while none was
// issued (someone must approve the CSR: kube-controller-manager does not
// approve kubelet-serving CSRs by itself).
func (s *Server) GetCertificate() (*tls.Certificate, error) {
	if c := s.mgr.Current(); c != nil {
		return c, nil
	}
	return nil, errors.New("no serving certificate yet: the node's kubernetes.io/kubelet-serving CSR is not approved and issued")
}
