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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// Server is the serving certificate issued through the apiserver
// (--rotate-server-certificates, kubelet's serverTLSBootstrap).
type Server struct {
	mgr certificate.Manager
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
// stored as kubelet-server-current.pem once issued.
func NewServer(ctx context.Context, o Options, so ServerOptions) (*Server, error) {
	o = o.withDefaults()
	if o.Dir == "" || o.Kubeconfig == "" || o.NodeName == "" {
		return nil, errors.New("serving certificate: --rotate-server-certificates needs --cert-dir, --kubeconfig and a node name")
	}
	if len(so.IPs) == 0 {
		return nil, errors.New("serving certificate: --rotate-server-certificates needs the node's IP (--node-ip)")
	}
	if err := os.MkdirAll(string(o.Dir), 0o700); err != nil {
		return nil, fmt.Errorf("--cert-dir: %w", err)
	}
	store, err := certificate.NewFileStore(ServerPrefix, string(o.Dir), string(o.Dir), "", "")
	if err != nil {
		return nil, fmt.Errorf("--cert-dir %s: %w", o.Dir, err)
	}
	client := so.Client
	if client == nil {
		client = &Client{o: o}
	}
	mctx := klogContext(ctx, o.Log)
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) {
			if so.Client != nil {
				cur := so.Client.Current()
				if cur == nil {
					return nil, errors.New("no client certificate yet")
				}
				return client.clientset(cur)
			}
			return client.clientset(nil)
		},
		Template: &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}},
			DNSNames:    so.DNSNames,
			IPAddresses: so.IPs,
		},
		SignerName:       certificatesv1.KubeletServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: store,
		Name:             "serving certificate",
		Ctx:              &mctx,
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	return &Server{mgr: m}, nil
}

// Run requests and rotates the certificate until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	s.mgr.Start()
	<-ctx.Done()
	s.mgr.Stop()
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
