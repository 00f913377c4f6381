package auth

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
)

// ErrClusterCA is CheckClientCA's refusal.
var ErrClusterCA = errors.New("client CA is the cluster CA")

// maxCAFile bounds a CA bundle read (a client CA file or a kubeconfig's
// cluster CA).
const maxCAFile = 4 << 20

// CheckClientCA refuses a client CA file related to the CA of the
// kubeconfig's cluster (its current context's certificate-authority), for
// a mode in which no apiserver authorizes: every node's client
// certificate, and every certificate a bootstrap token can have signed,
// chains to that CA, so a local policy or AlwaysAllow would let any of
// them exec into the pods. See CheckClientCAData for what related means.
// A kubeconfig that does not exist yet, or names no CA, is not compared.
func CheckClientCA(clientCAFile, kubeconfig, mode string) error {
	if kubeconfig == "" || clientCAFile == "" {
		return nil
	}
	clientPEM, err := os.ReadFile(clientCAFile)
	if err != nil {
		return fmt.Errorf("--client-ca-file: %w", err)
	}
	return CheckClientCAData(clientCAFile, clientPEM, kubeconfig, mode)
}

// CheckClientCAData is CheckClientCA on the client CA file's content,
// read by the caller (from the descriptor it checked). It refuses when a
// certificate of the client CA file and one of the cluster CA are
// related, in either direction: they share a public key (the cluster CA
// itself, or the cluster CA re-issued with the same key), or one was
// issued by the other, directly or through certificates of either file
// (an intermediate of the cluster CA in the client CA file; a root that
// issued the cluster CA).
func CheckClientCAData(clientCAFile string, clientPEM []byte, kubeconfig, mode string) error {
	if kubeconfig == "" {
		return nil
	}
	clusterPEM, err := clusterCA(kubeconfig)
	if err != nil || len(clusterPEM) == 0 {
		return err
	}
	client, cluster := certsOf(clientPEM), certsOf(clusterPEM)
	c, k, how := related(client, cluster)
	if c == nil {
		return nil
	}
	return fmt.Errorf("--client-ca-file %s holds the cluster CA of --kubeconfig %s (%s): %w; with --authorization-mode %s no apiserver decides who may do what, "+
		"and every node's client certificate and every certificate a bootstrap token can have signed chains to that CA, so any of them could exec into this node's pods "+
		"(the file's %q %s the cluster CA). "+
		"Use --authorization-mode Webhook (the apiserver authorizes each request by SubjectAccessReview), or a client CA of its own for the remote API (a new key, not issued by the cluster CA and not issuing it)",
		clientCAFile, kubeconfig, name(k), ErrClusterCA, mode, name(c), how)
}

// clusterCA is the PEM of the kubeconfig's current cluster CA; nothing
// when the kubeconfig does not exist yet or names none.
func clusterCA(kubeconfig string) ([]byte, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, nil
	}
	// The file as written, unvalidated: its client certificate may not
	// exist yet (kubeadm's kubelet.conf before the TLS bootstrap).
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil {
		return nil, nil
	}
	cl := cfg.Clusters[kctx.Cluster]
	if len(cl.CertificateAuthorityData) > 0 || cl.CertificateAuthority == "" {
		return cl.CertificateAuthorityData, nil
	}
	path := cl.CertificateAuthority
	if !filepath.IsAbs(path) { // relative to the kubeconfig, as kubectl reads it
		path = filepath.Join(filepath.Dir(kubeconfig), path)
	}
	// Unreadable: the mirror says so; nothing to compare.
	b, _ := os.ReadFile(path)
	if len(b) > maxCAFile {
		return nil, nil
	}
	return b, nil
}

// related returns a certificate of client and one of cluster that are
// related, and how the first stands to the second; nil when none are.
func related(client, cluster []*x509.Certificate) (c, k *x509.Certificate, how string) {
	all := append(append([]*x509.Certificate(nil), client...), cluster...)
	// Every certificate the cluster CA's keys issued, through any chain of
	// the two files, and every certificate sharing their keys.
	if c, k := firstIn(client, closure(cluster, all)); c != nil {
		if sameKey(c, k) {
			return c, k, "has the public key of"
		}
		return c, k, "was issued (directly or through an intermediate) by"
	}
	if k, c := firstIn(cluster, closure(client, all)); k != nil {
		if sameKey(c, k) {
			return c, k, "has the public key of"
		}
		return c, k, "issued (directly or through an intermediate)"
	}
	return nil, nil, ""
}

// closure is from, and every certificate of all that shares a key with
// one in it or was signed by one in it, repeated until nothing is added.
// Each member maps to the certificate of from it descends from.
func closure(from, all []*x509.Certificate) map[*x509.Certificate]*x509.Certificate {
	in := map[*x509.Certificate]*x509.Certificate{}
	for _, c := range from {
		in[c] = c
	}
	for added := true; added; {
		added = false
		for _, c := range all {
			if in[c] != nil {
				continue
			}
			for m, root := range in {
				if sameKey(c, m) || signedBy(c, m) {
					in[c] = root
					added = true
					break
				}
			}
		}
	}
	return in
}

// firstIn returns the first of certs in set, and the origin set maps it to.
func firstIn(certs []*x509.Certificate, set map[*x509.Certificate]*x509.Certificate) (*x509.Certificate, *x509.Certificate) {
	for _, c := range certs {
		if o := set[c]; o != nil {
			return c, o
		}
	}
	return nil, nil
}

func sameKey(a, b *x509.Certificate) bool {
	return bytes.Equal(a.RawSubjectPublicKeyInfo, b.RawSubjectPublicKeyInfo)
}

// signedBy says whether issuer's key signed c under issuer's name (a
// verifier builds chains by name), whatever issuer's constraints say.
func signedBy(c, issuer *x509.Certificate) bool {
	if c == issuer || !bytes.Equal(c.RawIssuer, issuer.RawSubject) {
		return false
	}
	return issuer.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}

func name(c *x509.Certificate) string {
	if c.Subject.CommonName != "" {
		return c.Subject.CommonName
	}
	return c.Subject.String()
}

// certsOf parses every CERTIFICATE block of a PEM bundle, skipping what
// does not parse.
func certsOf(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			out = append(out, c)
		}
	}
}
