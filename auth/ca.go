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

// CheckClientCA refuses a client CA file holding the CA of the kubeconfig's
// cluster (its current context's certificate-authority), for a mode in
// which no apiserver authorizes: every node's client certificate, and every
// certificate a bootstrap token can have signed, chains to that CA, so a
// local policy or AlwaysAllow would let any of them exec into the pods.
// A kubeconfig that does not exist yet, or names no CA, is not compared.
func CheckClientCA(clientCAFile, kubeconfig, mode string) error {
	if kubeconfig == "" || clientCAFile == "" {
		return nil
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil
	}
	// The file as written, unvalidated: its client certificate may not
	// exist yet (kubeadm's kubelet.conf before the TLS bootstrap).
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil {
		return nil
	}
	cl := cfg.Clusters[kctx.Cluster]
	clusterPEM := cl.CertificateAuthorityData
	if len(clusterPEM) == 0 && cl.CertificateAuthority != "" {
		path := cl.CertificateAuthority
		if !filepath.IsAbs(path) { // relative to the kubeconfig, as kubectl reads it
			path = filepath.Join(filepath.Dir(kubeconfig), path)
		}
		// Unreadable: the mirror says so; nothing to compare.
		clusterPEM, _ = os.ReadFile(path)
	}
	if len(clusterPEM) == 0 {
		return nil
	}
	clientPEM, err := os.ReadFile(clientCAFile)
	if err != nil {
		return fmt.Errorf("--client-ca-file: %w", err)
	}
	cluster := certsOf(clusterPEM)
	for _, c := range certsOf(clientPEM) {
		for _, k := range cluster {
			if bytes.Equal(c.Raw, k.Raw) {
				return fmt.Errorf("--client-ca-file %s holds the cluster CA of --kubeconfig %s (%s): %w; with --authorization-mode %s no apiserver decides who may do what, "+
					"and every node's client certificate and every certificate a bootstrap token can have signed chains to that CA, so any of them could exec into this node's pods. "+
					"Use --authorization-mode Webhook (the apiserver authorizes each request by SubjectAccessReview), or a client CA of its own for the remote API",
					clientCAFile, kubeconfig, c.Subject.CommonName, ErrClusterCA, mode)
			}
		}
	}
	return nil
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
