package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/podvisor/podvisor/internal/atomicfile"
)

// SelfSignedOptions name the node a self-signed serving certificate is for.
type SelfSignedOptions struct {
	// Host is the certificate's subject and first name: the node's name
	// (kubelet's hostname), an IP address or a DNS name.
	Host string
	// IPs and DNSNames are the node's other addresses (--node-ip).
	IPs      []net.IP
	DNSNames []string
	// MaxAge is the certificate's lifetime; 0 is kubelet's, a year.
	MaxAge time.Duration
}

// SelfSigned returns the self-signed serving pair of dir (kubelet.crt,
// kubelet.key), first writing a new one when the pair there is missing,
// unreadable, not valid at now or does not name every one of o's names
// and addresses; reused says whether it was kept. Kubelet keeps any
// readable pair; a renamed node or an expired pair is replaced here,
// because nothing else ever would.
func SelfSigned(d Dir, o SelfSignedOptions, now time.Time) (reused bool, err error) {
	if o.Host == "" {
		return false, errors.New("self-signed serving certificate: no host name")
	}
	pair, err := tls.LoadX509KeyPair(d.SelfSignedCert(), d.SelfSignedKey())
	if err == nil {
		if err = covers(pair.Leaf, o, now); err == nil {
			return true, nil
		}
	}
	cert, key, err := certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host: o.Host, AlternateIPs: o.IPs, AlternateDNS: o.DNSNames, MaxAge: o.MaxAge,
	})
	if err != nil {
		return false, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	// The key first: the API rereads the pair when the certificate changes.
	if err := atomicfile.Write(d.SelfSignedKey(), key, 0o600); err != nil {
		return false, err
	}
	if err := atomicfile.Write(d.SelfSignedCert(), cert, 0o644); err != nil {
		return false, err
	}
	return false, nil
}

// covers says why leaf does not serve o's names at now; nil: it does.
func covers(leaf *x509.Certificate, o SelfSignedOptions, now time.Time) error {
	if leaf == nil {
		return errors.New("no certificate")
	}
	if now.Before(leaf.NotBefore) || !now.Before(leaf.NotAfter) {
		return fmt.Errorf("valid from %s to %s only", leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	names := append([]string{o.Host}, o.DNSNames...)
	for _, ip := range o.IPs {
		names = append(names, ip.String())
	}
	for _, n := range names {
		if err := leaf.VerifyHostname(n); err != nil {
			return err
		}
	}
	return nil
}
