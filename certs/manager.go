package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"slices"
	"sync"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/internal/kube"
)

// Kubelet's certificate manager's times (client-go util/certificate).
const (
	// issueTimeout bounds the wait for one CSR to be approved and issued.
	issueTimeout = 15 * time.Minute
	// firstBackoff is the wait after a failed rotation, doubled after
	// each failure up to maxBackoff.
	firstBackoff = 2 * time.Second
	maxBackoff   = 32 * time.Second
	// settle is the pause between a rotation and the next deadline.
	settle = time.Second
)

// The wait for a CSR: a watch lasts at most watchWindow; pollInterval
// after a watch ended or failed, the CSR is read again and watched from
// there (polling while no watch can be had).
const (
	watchWindow  = 5 * time.Minute
	pollInterval = 2 * time.Second
)

// managerConfig is what a manager rotates and how it asks for it.
type managerConfig struct {
	store *fileStore
	// initCertPEM and initKeyPEM are the pair to start with when the
	// store has none valid: used and stored until a certificate is
	// issued, which is requested at once (kubelet's bootstrap pair).
	initCertPEM, initKeyPEM []byte
	template                *x509.CertificateRequest
	signer                  string
	// usage is the extended usage requested: client or server auth.
	usage certsv1.KeyUsage
	// client is the apiserver to request with, given the current
	// certificate (nil when none is valid); called at each rotation.
	client func(current *tls.Certificate) (kube.Interface, error)
	// timeout bounds each request but the wait for the issue.
	timeout time.Duration
	log     *slog.Logger
}

// manager keeps a certificate issued through CertificateSigningRequests
// and renews it before it expires, as kubelet's certificate manager does.
type manager struct {
	c managerConfig
	// fraction is the part of a certificate's lifetime after which it is
	// renewed: kubelet's jitter, uniform in [0.7, 0.9).
	fraction func() float64

	mu   sync.RWMutex
	cert *tls.Certificate
	// force: renew at once (no pair, or the initial one); read and
	// cleared by run only.
	force bool
}

// newManager loads the store's pair, else the initial pair (stored, and
// replaced at once), else none (requested at once). A store whose pair
// is unreadable is an error, as kubelet's.
func newManager(c managerConfig) (*manager, error) {
	m := &manager{c: c, fraction: func() float64 { return 0.7 + 0.2*mathrand.Float64() }}
	cur, err := c.store.Current()
	switch {
	case err == nil && time.Now().Before(cur.Leaf.NotAfter):
		m.cert = cur
		return m, nil
	case err != nil && !errors.Is(err, errNoPair):
		return nil, err
	}
	// None, or expired.
	m.force = true
	if len(c.initCertPEM) == 0 || len(c.initKeyPEM) == 0 {
		return m, nil
	}
	if m.cert, err = parsePair(c.initCertPEM, c.initKeyPEM); err != nil {
		return nil, fmt.Errorf("initial certificate: %w", err)
	}
	if _, err := c.store.Update(c.initCertPEM, c.initKeyPEM); err != nil {
		c.log.Warn("could not store the initial certificate", "err", err)
	}
	return m, nil
}

// Current is the certificate in use; nil when there is none or it
// expired.
func (m *manager) Current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.cert == nil || !time.Now().Before(m.cert.Leaf.NotAfter) {
		return nil
	}
	return m.cert
}

func (m *manager) current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cert
}

// run renews the certificate at each deadline until ctx ends; a failed
// renewal is retried with a backoff of 2 s doubling to 32 s. It returns
// once all its work ended.
func (m *manager) run(ctx context.Context) {
	log := m.c.log
	for {
		deadline := m.deadline()
		if d := time.Until(deadline); d > 0 {
			log.Info("next certificate rotation", "at", deadline.Round(time.Second), "in", d.Round(time.Second), "expires", m.current().Leaf.NotAfter)
			if !sleep(ctx, d) {
				return
			}
		}
		for failures := 0; ; failures++ {
			err := m.rotate(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			retry := retryAfter(failures)
			log.Warn("certificate rotation failed", "err", err, "retry", retry.Round(100*time.Millisecond))
			if !sleep(ctx, retry) {
				return
			}
		}
		if !sleep(ctx, settle) {
			return
		}
	}
}

// retryAfter is the wait after failures+1 failed rotations: 2 s doubling to
// 32 s, with up to 10 % more.
func retryAfter(failures int) time.Duration {
	d := maxBackoff
	if failures < 4 {
		d = firstBackoff << failures
	}
	return d + time.Duration(mathrand.Int64N(int64(d)/10+1))
}

// sleep waits d or the end of ctx; false at the end of ctx.
func sleep(ctx context.Context, d time.Duration) bool { return backoff.Wait(ctx, d) == nil }

// deadline is when to renew: now without a certificate, for the initial
// one or one that does not name what the template asks; else notBefore
// plus 70 to 90 % of its lifetime.
func (m *manager) deadline() time.Time {
	now := time.Now()
	if m.force {
		m.force = false
		return now
	}
	cert := m.current()
	if cert == nil {
		return now
	}
	if why := unsatisfied(cert.Leaf, m.c.template); why != "" {
		m.c.log.Info("the certificate does not match the request: renewing it", "why", why)
		return now
	}
	life := cert.Leaf.NotAfter.Sub(cert.Leaf.NotBefore)
	return cert.Leaf.NotBefore.Add(time.Duration(float64(life) * m.fraction()))
}

// unsatisfied says what of tmpl leaf lacks: its common name, or one of
// its DNS names, addresses or organizations; "" for nothing. More names
// in leaf are fine.
func unsatisfied(leaf *x509.Certificate, tmpl *x509.CertificateRequest) string {
	if leaf.Subject.CommonName != tmpl.Subject.CommonName {
		return fmt.Sprintf("common name %q, want %q", leaf.Subject.CommonName, tmpl.Subject.CommonName)
	}
	for _, n := range tmpl.DNSNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return "no DNS name " + n
		}
	}
	for _, ip := range tmpl.IPAddresses {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return "no IP address " + ip.String()
		}
	}
	for _, o := range tmpl.Subject.Organization {
		if !slices.Contains(leaf.Subject.Organization, o) {
			return "no organization " + o
		}
	}
	return ""
}

// usages are kubelet's for a key (DefaultKubeletClientGetUsages and
// DefaultKubeletServingGetUsages): digital signature and ext, and key
// encipherment for an RSA key only.
func usages(key any, ext certsv1.KeyUsage) []certsv1.KeyUsage {
	if _, ok := key.(*rsa.PrivateKey); ok {
		return []certsv1.KeyUsage{certsv1.UsageDigitalSignature, certsv1.UsageKeyEncipherment, ext}
	}
	return []certsv1.KeyUsage{certsv1.UsageDigitalSignature, ext}
}

// rotate requests a certificate for a new key, waits for it to be issued,
// stores it and makes it current.
func (m *manager) rotate(ctx context.Context) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, m.c.template, key)
	if err != nil {
		return fmt.Errorf("certificate request: %w", err)
	}
	cs, err := m.c.client(m.Current())
	if err != nil {
		return fmt.Errorf("apiserver client: %w", err)
	}
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	req := &certsv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certsv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName: m.c.signer,
			Usages:     usages(key, m.c.usage),
		},
	}
	rctx, cancel := context.WithTimeout(ctx, m.c.timeout)
	created, err := csrs.Create(rctx, req, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return fmt.Errorf("create a certificate signing request: %w", err)
	}
	m.c.log.Info("certificate signing request created, waiting for it to be approved and issued", "csr", created.Name, "signer", m.c.signer)
	certPEM, err := m.waitIssued(ctx, csrs, created)
	if err != nil {
		return err
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("certificate issued for %s: %w", created.Name, err)
	}
	cert, err := m.c.store.Update(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("store the certificate issued for %s: %w", created.Name, err)
	}
	m.mu.Lock()
	m.cert = cert
	m.mu.Unlock()
	m.c.log.Info("certificate rotated", "csr", created.Name, "file", m.c.store.currentPath(),
		"notBefore", cert.Leaf.NotBefore, "notAfter", cert.Leaf.NotAfter)
	return nil
}

type csrClient = kube.StatusClient[*certsv1.CertificateSigningRequest, *certsv1.CertificateSigningRequestList]

// waitIssued waits, at most issueTimeout, for created to be approved and
// its certificate issued, and returns the certificate: a watch of it from
// the version last read, for at most watchWindow, then the CSR read again
// after pollInterval, and so on; while a watch cannot be had, that is
// polling. Denied, failed, deleted or replaced is an error.
func (m *manager) waitIssued(ctx context.Context, csrs csrClient, created *certsv1.CertificateSigningRequest) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, issueTimeout)
	defer cancel()
	name, uid := created.Name, created.UID
	last := created
	for {
		if last != nil {
			if cert, err := issued(last, uid); cert != nil || err != nil {
				return cert, err
			}
			cert, settled, err := m.watchIssued(ctx, csrs, name, uid, last.ResourceVersion)
			if settled {
				return cert, err
			}
			if err != nil && ctx.Err() == nil {
				m.c.log.Debug("watching the certificate signing request", "csr", name, "err", err)
			}
		}
		if !sleep(ctx, pollInterval) {
			return nil, waitEnded(ctx, name)
		}
		gctx, gcancel := context.WithTimeout(ctx, m.c.timeout)
		got, err := csrs.Get(gctx, name, metav1.GetOptions{})
		gcancel()
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("certificate signing request %s was deleted", name)
		case err != nil:
			m.c.log.Debug("reading the certificate signing request", "csr", name, "err", err)
			last = nil
		default:
			last = got
		}
	}
}

func waitEnded(ctx context.Context, name string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("certificate signing request %s not issued within %v", name, issueTimeout)
	}
	return ctx.Err()
}

// watchIssued watches the CSR name from resourceVersion for at most
// watchWindow; settled when an event decides it (issued: the
// certificate; denied, failed, deleted or replaced: the error). Not
// settled, err is why the watch could not be had or broke; nil when it
// just ended.
func (m *manager) watchIssued(ctx context.Context, csrs csrClient, name string, uid types.UID, resourceVersion string) (cert []byte, settled bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, watchWindow)
	defer cancel()
	secs := int64(watchWindow / time.Second)
	w, err := csrs.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: resourceVersion,
		TimeoutSeconds:  &secs,
	})
	if err != nil {
		return nil, false, err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, false, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			switch ev.Type {
			case watch.Error:
				return nil, false, apierrors.FromObject(ev.Object)
			case watch.Added, watch.Modified, watch.Deleted:
			default:
				continue
			}
			csr, ok := ev.Object.(*certsv1.CertificateSigningRequest)
			if !ok || csr.Name != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return nil, true, fmt.Errorf("certificate signing request %s was deleted", name)
			}
			if cert, err := issued(csr, uid); cert != nil || err != nil {
				return cert, true, err
			}
		}
	}
}

// issued is csr's certificate once it is approved and issued; an error
// when it was denied or failed, or is another CSR of the same name than
// the one of uid.
func issued(csr *certsv1.CertificateSigningRequest, uid types.UID) ([]byte, error) {
	if csr.UID != uid {
		return nil, fmt.Errorf("certificate signing request %s was replaced (uid %s, want %s)", csr.Name, csr.UID, uid)
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certsv1.CertificateDenied:
			return nil, fmt.Errorf("certificate signing request %s was denied: %s: %s", csr.Name, c.Reason, c.Message)
		case certsv1.CertificateFailed:
			return nil, fmt.Errorf("certificate signing request %s failed: %s: %s", csr.Name, c.Reason, c.Message)
		case certsv1.CertificateApproved:
			approved = true
		}
	}
	if approved && len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, nil
	}
	return nil, nil
}
