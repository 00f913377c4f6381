package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that signs certificates.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate's PEM file.
	CertFile string
}

// Pair is a certificate and its key, as PEM files.
type Pair struct {
	CertFile, KeyFile string
	// Serial is the certificate's serial number.
	Serial *big.Int
}

// NewCA makes a CA called name, written to dir/name-ca.crt.
func NewCA(dir, name string) (*CA, error) {
	return NewCAWith(dir, name, CAOptions{})
}

// CAOptions say how NewCAWith makes a CA.
type CAOptions struct {
	// Key is the CA's key; nil makes a new one. Another CA's key makes
	// this CA that one re-issued.
	Key *ecdsa.PrivateKey
	// Parent issues the CA, an intermediate; nil makes it self-signed.
	Parent *CA
	// File is the name of the certificate's file in dir; "" is
	// name-ca.crt.
	File string
}

// NewCAWith makes a CA called name as o says, written to dir.
func NewCAWith(dir, name string, o CAOptions) (*CA, error) {
	key := o.Key
	if key == nil {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, err
		}
	}
	tmpl := template(name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	issuer, signer := tmpl, key
	if o.Parent != nil {
		issuer, signer = o.Parent.cert, o.Parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("sign CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	file := o.File
	if file == "" {
		file = name + "-ca.crt"
	}
	ca := &CA{cert: cert, key: key, CertFile: filepath.Join(dir, file)}
	return ca, writePEM(ca.CertFile, "CERTIFICATE", der, 0o644)
}

// Key is the CA's private key: a CA made with it is this one re-issued.
func (ca *CA) Key() *ecdsa.PrivateKey { return ca.key }

// PEM is the CA's certificate, PEM-encoded.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// Server makes a server certificate for ips, written to dir/name.crt and
// dir/name.key.
func (ca *CA) Server(dir, name string, ips ...net.IP) (*Pair, error) {
	tmpl := template(name)
	tmpl.IPAddresses = ips
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.sign(dir, name, tmpl)
}

// Client makes a client certificate for the user name, written to
// dir/name.crt and dir/name.key.
func (ca *CA) Client(dir, name string) (*Pair, error) {
	tmpl := template(name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.sign(dir, name, tmpl)
}

// ClientInGroups makes a client certificate for the user name in groups
// (its O), written to dir/name.crt and dir/name.key.
func (ca *CA) ClientInGroups(dir, name string, groups ...string) (*Pair, error) {
	tmpl := template(name)
	tmpl.Subject.Organization = groups
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.sign(dir, name, tmpl)
}

func (ca *CA) sign(dir, name string, tmpl *x509.Certificate) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", name, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	p := &Pair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key"), Serial: tmpl.SerialNumber}
	if err := writePEM(p.KeyFile, "EC PRIVATE KEY", kder, 0o600); err != nil {
		return nil, err
	}
	return p, writePEM(p.CertFile, "CERTIFICATE", der, 0o644)
}

func template(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

// writePEM writes the file beside its place and renames it in, as a
// certificate rotation does.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
