package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podvisor/podvisor/internal/kube"
	"github.com/podvisor/podvisor/test/kubetest"
	"github.com/podvisor/podvisor/test/syncbuf"
)

// The tests run in a synctest bubble: time is the bubble's, advanced by
// sleeping while every goroutine waits, and a goroutine the manager left
// behind fails the test.

// decision is what the fake apiserver's signer does with a CSR.
type decision int

const (
	approve  decision = iota // approved and issued at once
	pending                  // left for the test to approve
	deny                     // denied
	fail                     // approved, then failed
	wrongKey                 // issued for another key
)

// apiserver is a fake clientset whose CSRs are named from their
// generateName, given a UID, and approved and signed by a test CA (or
// denied, failed...) as decide says.
type apiserver struct {
	t      *testing.T
	cs     *fake.Clientset
	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
	// life is the lifetime of the certificates it issues.
	life time.Duration

	mu      sync.Mutex
	decide  func(n int) decision // n counts the CSRs from 1
	created []*certsv1.CertificateSigningRequest
	times   []time.Time // of each create, failed ones too
	// createErr, when set, fails each create.
	createErr error
	// currents are the certificates the manager's client was made with.
	currents []*tls.Certificate
}

func newAPIServer(t *testing.T) *apiserver {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	a := &apiserver{t: t, cs: fake.NewClientset(), caKey: key, caCert: ca, life: time.Hour,
		decide: func(int) decision { return approve }}
	a.cs.PrependReactor("create", "certificatesigningrequests", a.react)
	return a
}

func (a *apiserver) react(action k8stesting.Action) (bool, runtime.Object, error) {
	csr := action.(k8stesting.CreateAction).GetObject().(*certsv1.CertificateSigningRequest)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, time.Now())
	if a.createErr != nil {
		return true, nil, a.createErr
	}
	n := len(a.created) + 1
	if csr.Name == "" {
		csr.Name = fmt.Sprintf("%s%d", csr.GenerateName, n)
	}
	csr.UID = types.UID(fmt.Sprintf("uid-%d", n))
	a.created = append(a.created, csr.DeepCopy())
	switch a.decide(n) {
	case approve:
		a.issue(csr, nil)
	case deny:
		csr.Status.Conditions = append(csr.Status.Conditions, certsv1.CertificateSigningRequestCondition{
			Type: certsv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "TestDenied", Message: "no"})
	case fail:
		csr.Status.Conditions = append(csr.Status.Conditions,
			certsv1.CertificateSigningRequestCondition{Type: certsv1.CertificateApproved, Status: corev1.ConditionTrue},
			certsv1.CertificateSigningRequestCondition{Type: certsv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "TestFailed", Message: "broken"})
	case wrongKey:
		other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		a.issue(csr, other.Public())
	}
	return false, nil, nil // the tracker stores it
}

// issue approves csr and signs its request (for pub instead of its key
// when set) for a.life.
func (a *apiserver) issue(csr *certsv1.CertificateSigningRequest, pub any) {
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		a.t.Errorf("CSR %s: %v", csr.Name, err)
		return
	}
	if pub == nil {
		pub = req.PublicKey
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: req.Subject,
		DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: now, NotAfter: now.Add(a.life),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.caCert, pub, a.caKey)
	if err != nil {
		a.t.Errorf("sign CSR %s: %v", csr.Name, err)
		return
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certsv1.CertificateSigningRequestCondition{
		Type: certsv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApproved"})
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// approveLater approves and issues the stored CSR name, as an admin or a
// controller does, through an update of its status.
func (a *apiserver) approveLater(name string) {
	a.t.Helper()
	csrs := a.cs.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	a.issue(csr, nil)
	if _, err := csrs.UpdateStatus(context.Background(), csr, metav1.UpdateOptions{}); err != nil {
		a.t.Fatal(err)
	}
}

func (a *apiserver) csrs() []*certsv1.CertificateSigningRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.created)
}

// current is the certificate the manager's client was made with at
// rotation i.
func (a *apiserver) current(i int) *tls.Certificate {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.currents[i]
}

func (a *apiserver) createTimes() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.times)
}

// client is the manager's client function: this fake, recording the
// current certificate it is given.
func (a *apiserver) client(cur *tls.Certificate) (kube.Interface, error) {
	a.mu.Lock()
	a.currents = append(a.currents, cur)
	a.mu.Unlock()
	return kubetest.Wrap(a.cs), nil
}

// logBuffer collects the manager's log.
type logBuffer struct{ syncbuf.Buffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// nodeSubject is the client certificate's subject for node n1.
var nodeSubject = pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}

// clientManager is a manager of the client certificate of node n1 in
// dir, with initial pair init (none when empty).
func clientManager(t *testing.T, a *apiserver, dir Dir, init testCert, log *slog.Logger) *manager {
	t.Helper()
	store, err := newFileStore(dir, ClientPrefix, "", "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := newManager(managerConfig{
		store:       store,
		initCertPEM: init.certPEM, initKeyPEM: init.keyPEM,
		template: &x509.CertificateRequest{Subject: nodeSubject},
		signer:   certsv1.KubeAPIServerClientKubeletSignerName,
		usage:    certsv1.UsageClientAuth,
		client:   a.client,
		timeout:  10 * time.Second,
		log:      log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// start runs m until the returned stop, which checks that run returned.
func start(t *testing.T, run func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	return func() {
		t.Helper()
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("run did not return at the end of its context")
		}
	}
}

// stored is the pair kubelet-client-current.pem (or another link) points
// at, and the file it names.
func stored(t *testing.T, link string) (*tls.Certificate, string) {
	t.Helper()
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(link, link)
	if err != nil {
		t.Fatal(err)
	}
	return &pair, target
}

// With no certificate and no initial pair, the first is requested at
// once: a kubelet client CSR, stored and current once issued.
func TestManagerRequestsFirstCertificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		dir := Dir(t.TempDir())
		m := clientManager(t, a, dir, testCert{}, slog.New(slog.DiscardHandler))
		if m.Current() != nil {
			t.Fatal("a certificate before any was issued")
		}
		stop := start(t, m.run)
		defer stop()
		synctest.Wait()

		csrs := a.csrs()
		if len(csrs) != 1 {
			t.Fatalf("%d CSRs, want 1", len(csrs))
		}
		r := csrs[0]
		if r.GenerateName != "csr-" || r.Spec.SignerName != "kubernetes.io/kube-apiserver-client-kubelet" {
			t.Errorf("CSR generateName %q signer %q", r.GenerateName, r.Spec.SignerName)
		}
		if want := []certsv1.KeyUsage{certsv1.UsageDigitalSignature, certsv1.UsageClientAuth}; !slices.Equal(r.Spec.Usages, want) {
			t.Errorf("usages %v, want %v (kubelet's for an ECDSA key)", r.Spec.Usages, want)
		}
		block, _ := pem.Decode(r.Spec.Request)
		if block == nil || block.Type != "CERTIFICATE REQUEST" {
			t.Fatalf("request %q", r.Spec.Request)
		}
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if req.Subject.CommonName != "system:node:n1" || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
			t.Errorf("request's subject %v", req.Subject)
		}
		if k, ok := req.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
			t.Errorf("request's key %T, want ECDSA P-256", req.PublicKey)
		}
		if a.current(0) != nil {
			t.Error("the client was given a certificate although there was none")
		}

		cur := m.Current()
		if cur == nil || cur.Leaf == nil {
			t.Fatal("no current certificate after it was issued")
		}
		if err := req.CheckSignature(); err != nil {
			t.Fatal(err)
		}
		pair, target := stored(t, dir.ClientCurrent())
		if !pair.Leaf.Equal(cur.Leaf) {
			t.Error("kubelet-client-current.pem is not the current certificate")
		}
		if !datedName(ClientPrefix).MatchString(filepath.Base(target)) || filepath.Dir(target) != string(dir) {
			t.Errorf("link to %s", target)
		}
	})
}

// The kubeconfig's initial pair is current and stored at first, as
// kubelet does, and replaced at once through a CSR made with it.
func TestManagerReplacesInitialPairAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		dir := Dir(t.TempDir())
		init := newCertFor(t, nodeSubject, time.Now().Add(-time.Minute), time.Now().Add(24*time.Hour))
		m := clientManager(t, a, dir, init, slog.New(slog.DiscardHandler))
		if cur := m.Current(); cur == nil || !cur.Leaf.Equal(init.cert) {
			t.Fatal("the initial pair is not current before the first rotation")
		}
		if pair, _ := stored(t, dir.ClientCurrent()); !pair.Leaf.Equal(init.cert) {
			t.Error("the initial pair was not stored")
		}
		stop := start(t, m.run)
		defer stop()
		synctest.Wait()
		if n := len(a.csrs()); n != 1 {
			t.Fatalf("%d CSRs at once, want 1: the initial pair is replaced although valid for a day", n)
		}
		if a.current(0) == nil || !a.current(0).Leaf.Equal(init.cert) {
			t.Error("the CSR was not requested with the initial certificate")
		}
		cur := m.Current()
		if cur.Leaf.Equal(init.cert) || cur.Leaf.Issuer.CommonName != "test-ca" {
			t.Fatal("still the initial certificate")
		}
		if pair, _ := stored(t, dir.ClientCurrent()); !pair.Leaf.Equal(cur.Leaf) {
			t.Error("kubelet-client-current.pem still holds the initial pair")
		}
	})
}

// An issued certificate is renewed at notBefore plus 70 to 90 % of its
// lifetime (here 80 %), the link moving to a new dated file and the old
// one kept.
func TestManagerRotatesAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		a.life = 100 * time.Minute
		dir := Dir(t.TempDir())
		m := clientManager(t, a, dir, testCert{}, slog.New(slog.DiscardHandler))
		m.fraction = func() float64 { return 0.8 }
		stop := start(t, m.run)
		defer stop()
		synctest.Wait()
		first := m.Current()
		_, firstTarget := stored(t, dir.ClientCurrent())
		if first == nil {
			t.Fatal("no first certificate")
		}
		deadline := first.Leaf.NotBefore.Add(80 * time.Minute)

		time.Sleep(time.Until(deadline) - time.Second)
		synctest.Wait()
		if n := len(a.csrs()); n != 1 || !m.Current().Leaf.Equal(first.Leaf) {
			t.Fatalf("%d CSRs a second before the deadline, want still 1", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := len(a.csrs()); n != 2 {
			t.Fatalf("%d CSRs a second after the deadline, want 2", n)
		}
		second := m.Current()
		if second.Leaf.Equal(first.Leaf) || !second.Leaf.NotAfter.After(first.Leaf.NotAfter) {
			t.Fatal("not renewed at the deadline")
		}
		if a.current(1) == nil || !a.current(1).Leaf.Equal(first.Leaf) {
			t.Error("the renewal was not requested with the certificate it renews")
		}
		pair, target := stored(t, dir.ClientCurrent())
		if !pair.Leaf.Equal(second.Leaf) || target == firstTarget {
			t.Errorf("after the renewal the link points to %s holding %v", target, pair.Leaf.SerialNumber)
		}
		if old, err := tls.LoadX509KeyPair(firstTarget, firstTarget); err != nil || !old.Leaf.Equal(first.Leaf) {
			t.Errorf("the replaced dated file: %v", err)
		}
	})
}

// A denied or failed CSR is an error; the rotation is retried 2 s later,
// then succeeds.
func TestManagerRetriesDeniedCSR(t *testing.T) {
	for _, d := range []decision{deny, fail, wrongKey} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := newAPIServer(t)
				a.decide = func(n int) decision {
					if n == 1 {
						return d
					}
					return approve
				}
				var logs logBuffer
				dir := Dir(t.TempDir())
				m := clientManager(t, a, dir, testCert{}, logs.logger())
				stop := start(t, m.run)
				defer stop()
				synctest.Wait()
				if n := len(a.csrs()); n != 1 || m.Current() != nil {
					t.Fatalf("%d CSRs, current %v; want the first refused", n, m.Current())
				}
				want := map[decision]string{deny: "denied: TestDenied: no", fail: "failed: TestFailed: broken", wrongKey: "private key does not match public key"}[d]
				if !strings.Contains(logs.String(), "certificate rotation failed") || !strings.Contains(logs.String(), want) {
					t.Errorf("log lacks the failure %q:\n%s", want, logs.String())
				}
				if _, err := os.Lstat(dir.ClientCurrent()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("something stored for a refused CSR: %v", err)
				}
				time.Sleep(1900 * time.Millisecond)
				synctest.Wait()
				if n := len(a.csrs()); n != 1 {
					t.Fatalf("%d CSRs before the 2 s backoff", n)
				}
				time.Sleep(400 * time.Millisecond)
				synctest.Wait()
				if n := len(a.csrs()); n != 2 || m.Current() == nil {
					t.Fatalf("%d CSRs after the backoff, current %v", n, m.Current())
				}
			})
		})
	}
}

func (d decision) String() string {
	return [...]string{"approve", "pending", "deny", "fail", "wrongKey"}[d]
}

// Failures back off 2, 4, 8, 16 s, then every 32 s (up to 10 % more), as
// kubelet's; the end of the context ends the retries.
func TestManagerBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		a.createErr = apierrors.NewServiceUnavailable("down")
		m := clientManager(t, a, Dir(t.TempDir()), testCert{}, slog.New(slog.DiscardHandler))
		stop := start(t, m.run)
		time.Sleep(3 * time.Minute)
		stop()
		times := a.createTimes()
		want := []time.Duration{2, 4, 8, 16, 32, 32, 32}
		if len(times) < len(want)+1 {
			t.Fatalf("%d attempts in 3 minutes, want at least %d", len(times), len(want)+1)
		}
		for i, w := range want {
			gap, w := times[i+1].Sub(times[i]), w*time.Second
			if gap < w || gap > w+w/10 {
				t.Errorf("wait %d: %v, want %v to %v", i+1, gap, w, w+w/10)
			}
		}
	})
}

// A CSR not approved at once is watched until it is, across watch
// windows; the end of the context ends the wait.
func TestManagerWaitsForApproval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		a.decide = func(int) decision { return pending }
		var watches int
		var mu sync.Mutex
		a.cs.PrependWatchReactor("certificatesigningrequests", func(k8stesting.Action) (bool, watch.Interface, error) {
			mu.Lock()
			watches++
			mu.Unlock()
			return false, nil, nil
		})
		m := clientManager(t, a, Dir(t.TempDir()), testCert{}, slog.New(slog.DiscardHandler))
		stop := start(t, m.run)
		defer stop()
		synctest.Wait()
		// Past a watch window: watched again.
		time.Sleep(watchWindow + pollInterval + time.Second)
		synctest.Wait()
		if m.Current() != nil || len(a.csrs()) != 1 {
			t.Fatal("a certificate without approval")
		}
		mu.Lock()
		if watches < 2 {
			t.Errorf("%d watches after a window, want 2", watches)
		}
		mu.Unlock()
		a.approveLater(a.csrs()[0].Name)
		synctest.Wait()
		if m.Current() == nil {
			t.Fatal("not current once approved")
		}
		if len(a.csrs()) != 1 {
			t.Errorf("%d CSRs, want the one", len(a.csrs()))
		}
	})
}

// Without a watch, the CSR is polled.
func TestManagerPollsWithoutWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		a.decide = func(int) decision { return pending }
		a.cs.PrependWatchReactor("certificatesigningrequests", func(k8stesting.Action) (bool, watch.Interface, error) {
			return true, nil, apierrors.NewMethodNotSupported(certsv1.Resource("certificatesigningrequests"), "watch")
		})
		m := clientManager(t, a, Dir(t.TempDir()), testCert{}, slog.New(slog.DiscardHandler))
		stop := start(t, m.run)
		defer stop()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		a.approveLater(a.csrs()[0].Name)
		time.Sleep(pollInterval + time.Second)
		synctest.Wait()
		if m.Current() == nil {
			t.Fatal("an approved CSR not seen by polling")
		}
	})
}

// A CSR deleted while waiting is an error, and another is requested.
func TestManagerDeletedCSR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		a.decide = func(n int) decision {
			if n == 1 {
				return pending
			}
			return approve
		}
		var logs logBuffer
		m := clientManager(t, a, Dir(t.TempDir()), testCert{}, logs.logger())
		stop := start(t, m.run)
		defer stop()
		synctest.Wait()
		if err := a.cs.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), a.csrs()[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !strings.Contains(logs.String(), "was deleted") {
			t.Errorf("log:\n%s", logs.String())
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if len(a.csrs()) != 2 || m.Current() == nil {
			t.Fatalf("%d CSRs, current %v", len(a.csrs()), m.Current())
		}
	})
}

// A CSR never approved is given up after kubelet's 15 minutes, and
// another is requested.
func TestManagerGivesUpAfterIssueTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAPIServer(t)
		a.decide = func(int) decision { return pending }
		m := clientManager(t, a, Dir(t.TempDir()), testCert{}, slog.New(slog.DiscardHandler))
		stop := start(t, m.run)
		defer stop()
		time.Sleep(issueTimeout - time.Second)
		synctest.Wait()
		if n := len(a.csrs()); n != 1 {
			t.Fatalf("%d CSRs before the timeout", n)
		}
		time.Sleep(time.Second + 3*time.Second)
		synctest.Wait()
		if n := len(a.csrs()); n != 2 {
			t.Fatalf("%d CSRs after the timeout and the backoff, want 2", n)
		}
	})
}

// The store's pair, when valid, is kept until its deadline; expired, it
// is replaced at once, with the initial pair meanwhile.
func TestManagerStoredPair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := Dir(t.TempDir())
		store, _ := newFileStore(dir, ClientPrefix, "", "")
		valid := newCert(t, "system:node:n1", time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
		if _, err := store.Update(valid.certPEM, valid.keyPEM); err != nil {
			t.Fatal(err)
		}
		a := newAPIServer(t)
		// The stored pair lacks O=system:nodes: replaced at once too, as
		// kubelet's template check does.
		m := clientManager(t, a, dir, testCert{}, slog.New(slog.DiscardHandler))
		if cur := m.Current(); cur == nil || !cur.Leaf.Equal(valid.cert) {
			t.Fatal("the stored pair is not current")
		}
		stop := start(t, m.run)
		synctest.Wait()
		if n := len(a.csrs()); n != 1 {
			t.Errorf("%d CSRs for a stored pair lacking the organization, want 1", n)
		}
		stop()

		// A stored pair that satisfies the template waits for its deadline.
		a = newAPIServer(t)
		m = clientManager(t, a, dir, testCert{}, slog.New(slog.DiscardHandler))
		stop = start(t, m.run)
		synctest.Wait()
		if n := len(a.csrs()); n != 0 {
			t.Errorf("%d CSRs for a valid stored pair, want none before its deadline", n)
		}
		stop()

		// Expired: none current, or the initial pair, replaced at once.
		time.Sleep(2 * time.Hour)
		a = newAPIServer(t)
		if m := clientManager(t, a, dir, testCert{}, slog.New(slog.DiscardHandler)); m.Current() != nil {
			t.Error("an expired stored pair is current")
		}
		init := newCertFor(t, nodeSubject, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
		m = clientManager(t, a, dir, init, slog.New(slog.DiscardHandler))
		if cur := m.Current(); cur == nil || !cur.Leaf.Equal(init.cert) {
			t.Fatal("an expired stored pair preferred to the initial pair")
		}
		stop = start(t, m.run)
		synctest.Wait()
		if n := len(a.csrs()); n != 1 {
			t.Errorf("%d CSRs, want 1", n)
		}
		stop()
	})
}

// Client, from a kubeconfig with an embedded pair (kubeadm's
// kubelet.conf), replaces it at once with one requested for the node.
func TestClientReplacesKubeconfigPair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		a := newAPIServer(t)
		init := newCertFor(t, nodeSubject, time.Now().Add(-time.Minute), time.Now().Add(24*time.Hour))
		kc := filepath.Join(dir, "kubelet.conf")
		writeKubeconfig(t, kc, &clientcmdapi.AuthInfo{ClientCertificateData: init.certPEM, ClientKeyData: init.keyPEM}, nil)
		c, err := NewClient(Options{Dir: Dir(filepath.Join(dir, "pki")), Kubeconfig: kc, NodeName: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		c.clientFor = a.client
		stop := start(t, func(ctx context.Context) { c.Run(ctx) })
		defer stop()
		synctest.Wait()
		cur := c.Current()
		if cur == nil || cur.Leaf.Equal(init.cert) {
			t.Fatal("the kubeconfig's pair not replaced")
		}
		if cur.Leaf.Subject.CommonName != "system:node:n1" || !slices.Equal(cur.Leaf.Subject.Organization, []string{"system:nodes"}) {
			t.Errorf("subject %v", cur.Leaf.Subject)
		}
		if pair, _ := stored(t, Dir(filepath.Join(dir, "pki")).ClientCurrent()); !pair.Leaf.Equal(cur.Leaf) {
			t.Error("not stored")
		}
	})
}

// Server requests a kubelet-serving certificate naming the node's names
// and addresses, and replaces a stored one lacking an address at once.
func TestServerRequestsServingCertificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := Dir(t.TempDir())
		a := newAPIServer(t)
		o := Options{Dir: dir, Kubeconfig: "unused", NodeName: "n1"}.withDefaults()
		so := ServerOptions{DNSNames: []string{"n1", "box"}, IPs: []net.IP{net.ParseIP("10.1.2.3")}}
		s, err := newServer(o, so, a.client)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetCertificate(); err == nil {
			t.Fatal("a serving certificate before any was issued")
		}
		stop := start(t, func(ctx context.Context) { s.Run(ctx) })
		synctest.Wait()
		r := a.csrs()[0]
		if r.Spec.SignerName != "kubernetes.io/kubelet-serving" {
			t.Errorf("signer %s", r.Spec.SignerName)
		}
		if want := []certsv1.KeyUsage{certsv1.UsageDigitalSignature, certsv1.UsageServerAuth}; !slices.Equal(r.Spec.Usages, want) {
			t.Errorf("usages %v, want %v", r.Spec.Usages, want)
		}
		cert, err := s.GetCertificate()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"n1", "box", "10.1.2.3"} {
			if err := cert.Leaf.VerifyHostname(n); err != nil {
				t.Error(err)
			}
		}
		if pair, _ := stored(t, dir.ServerCurrent()); !pair.Leaf.Equal(cert.Leaf) {
			t.Error("kubelet-server-current.pem is not the served certificate")
		}
		stop()

		// Restarted with the stored certificate: kept.
		s, _ = newServer(o, so, a.client)
		stop = start(t, func(ctx context.Context) { s.Run(ctx) })
		synctest.Wait()
		if n := len(a.csrs()); n != 1 {
			t.Errorf("%d CSRs after a restart, want the one", n)
		}
		stop()
		// A new address: replaced at once.
		so.IPs = append(so.IPs, net.ParseIP("10.9.9.9"))
		s, _ = newServer(o, so, a.client)
		if got, _ := s.GetCertificate(); got == nil || !got.Leaf.Equal(cert.Leaf) {
			t.Error("the stored certificate is not served until the new one is issued")
		}
		stop = start(t, func(ctx context.Context) { s.Run(ctx) })
		synctest.Wait()
		if n := len(a.csrs()); n != 2 {
			t.Errorf("%d CSRs after the address changed, want 2", n)
		}
		if got, _ := s.GetCertificate(); got == nil || got.Leaf.VerifyHostname("10.9.9.9") != nil {
			t.Error("the new address is not served")
		}
		stop()
	})
}

// An update cut between its two links is finished when the store is
// opened; a current that is not a link is not replaced.
func TestStoreRecoversAndRefusesFile(t *testing.T) {
	dir := Dir(t.TempDir())
	c := newCert(t, "system:node:n1", time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	dated := filepath.Join(string(dir), "kubelet-client-2026-01-02-03-04-05.pem")
	if err := os.WriteFile(dated, append(slices.Clone(c.certPEM), c.keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dated, filepath.Join(string(dir), "kubelet-client-updated.pem")); err != nil {
		t.Fatal(err)
	}
	s, err := newFileStore(dir, ClientPrefix, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(dir.ClientCurrent()); err != nil || target != dated {
		t.Fatalf("current -> %q, %v; want the updated link's %s", target, err, dated)
	}
	if cur, err := s.Current(); err != nil || !cur.Leaf.Equal(c.cert) {
		t.Fatalf("Current = %v", err)
	}

	os.Remove(dir.ClientCurrent())
	os.WriteFile(dir.ClientCurrent(), append(slices.Clone(c.certPEM), c.keyPEM...), 0o600)
	if _, err := s.Update(c.certPEM, c.keyPEM); err == nil || !strings.Contains(err.Error(), "not a symbolic link") {
		t.Errorf("Update over a regular current file: %v", err)
	}
}

// Without a current link, the store loads the files the kubeconfig
// names, then <prefix>.crt and .key; with none, errNoPair.
func TestStoreFallbacks(t *testing.T) {
	dir := Dir(t.TempDir())
	a := newCert(t, "a", time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	b := newCert(t, "b", time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	certFile, keyFile := filepath.Join(string(dir), "x.crt"), filepath.Join(string(dir), "x.key")
	s, _ := newFileStore(dir, ClientPrefix, certFile, keyFile)
	if _, err := s.Current(); !errors.Is(err, errNoPair) {
		t.Fatalf("empty store: %v", err)
	}
	os.WriteFile(filepath.Join(string(dir), "kubelet-client.crt"), b.certPEM, 0o600)
	os.WriteFile(filepath.Join(string(dir), "kubelet-client.key"), b.keyPEM, 0o600)
	if cur, err := s.Current(); err != nil || cur.Leaf.Subject.CommonName != "b" {
		t.Fatalf("kubelet-client.crt: %v", err)
	}
	os.WriteFile(certFile, a.certPEM, 0o600)
	os.WriteFile(keyFile, a.keyPEM, 0o600)
	if cur, err := s.Current(); err != nil || cur.Leaf.Subject.CommonName != "a" {
		t.Fatalf("the kubeconfig's files: %v", err)
	}
	if _, err := s.Update(b.certPEM, b.keyPEM); err != nil {
		t.Fatal(err)
	}
	if cur, err := s.Current(); err != nil || cur.Leaf.Subject.CommonName != "b" {
		t.Fatalf("after an update: %v", err)
	}
	if _, err := s.Update(a.certPEM, b.keyPEM); err == nil {
		t.Error("a key of another certificate stored")
	}
}

// datedName matches the name of a pair the store keeps (kubelet's).
func datedName(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `-\d{4}(-\d{2}){5}\.pem$`)
}
