package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/certs"
	"github.com/podvisor/podvisor/internal/version"
)

// validateCerts checks the certificate flags together.
func (c *Config) validateCerts() error {
	var errs []error
	if c.CertDir == "" && (c.RotateCertificates && c.Kubeconfig != "" || c.BootstrapKubeconfig != "" || c.selfServing()) {
		errs = append(errs, errors.New("--cert-dir: empty"))
	}
	if c.BootstrapKubeconfig != "" && (c.Kubeconfig == "" || !c.RotateCertificates) {
		errs = append(errs, errors.New("--bootstrap-kubeconfig needs --kubeconfig (the file it writes) and --rotate-certificates (the certificate manager requests the certificate)"))
	}
	if c.RotateServerCertificates {
		switch {
		case c.TLSBindAddress == "":
			errs = append(errs, errors.New("--rotate-server-certificates needs --tls-bind-address"))
		case c.TLSCertFile != "" || c.TLSPrivateKeyFile != "":
			errs = append(errs, errors.New("--rotate-server-certificates and --tls-cert-file/--tls-private-key-file exclude each other"))
		case c.Kubeconfig == "":
			errs = append(errs, errors.New("--rotate-server-certificates needs --kubeconfig (the apiserver that issues the certificate)"))
		}
	}
	return errors.Join(errs...)
}

// selfServing says whether the remote API serves a certificate of podvisor's
// own (self-signed or issued through a CSR): --tls-bind-address without
// --tls-cert-file and --tls-private-key-file.
func (c *Config) selfServing() bool {
	return c.TLSBindAddress != "" && c.TLSCertFile == "" && c.TLSPrivateKeyFile == ""
}

// certOptions are the certs package's options for this daemon.
func (c *Config) certOptions(node string, log *slog.Logger) certs.Options {
	return certs.Options{
		Dir:                 certs.Dir(c.CertDir),
		Kubeconfig:          c.Kubeconfig,
		BootstrapKubeconfig: c.BootstrapKubeconfig,
		NodeName:            node,
		UserAgent:           "podvisor/" + version.Version + " (" + node + ")",
		Log:                 log.With("component", "certificates"),
	}
}

// clientCertificate is the rotated client certificate, nil when
// --rotate-certificates is off or there is no --kubeconfig.
func (c *Config) clientCertificate(node string, log *slog.Logger) (*certs.Client, error) {
	if !c.RotateCertificates || c.Kubeconfig == "" {
		return nil, nil
	}
	return certs.NewClient(c.certOptions(node, log))
}

// servingCertificate gives remote its certificate when podvisor makes its
// own: a self-signed pair in --cert-dir (written now, or reused), or with
// --rotate-server-certificates one issued through a CSR, whose manager it
// returns to be run.
func (c *Config) servingCertificate(ctx context.Context, remote *api.TLSConfig, node, nodeIP string, client *certs.Client, log *slog.Logger) (*certs.Server, error) {
	if remote == nil || !c.selfServing() {
		return nil, nil
	}
	var ips []net.IP
	if ip := net.ParseIP(nodeIP); ip != nil {
		ips = append(ips, ip)
	}
	var dns []string
	if h, err := os.Hostname(); err == nil && strings.ToLower(h) != node {
		dns = append(dns, strings.ToLower(h))
	}
	if c.RotateServerCertificates {
		srv, err := certs.NewServer(ctx, c.certOptions(node, log), certs.ServerOptions{DNSNames: append([]string{node}, dns...), IPs: ips, Client: client})
		if err != nil {
			return nil, err
		}
		remote.GetCertificate = srv.GetCertificate
		return srv, nil
	}
	reused, err := certs.SelfSigned(certs.Dir(c.CertDir), certs.SelfSignedOptions{Host: node, IPs: ips, DNSNames: dns}, time.Now())
	if err != nil {
		return nil, err
	}
	log.Info("serving the remote API with a self-signed certificate", "cert", remote.CertFile, "reused", reused)
	return nil, nil
}

// currentCert is c's Current, nil without c.
func currentCert(c *certs.Client) func() *tls.Certificate {
	if c == nil {
		return nil
	}
	return c.Current
}
