package mirror

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	b64 "encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func httptestRecorder(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// KubeletVersion follows the k8s.io/api podvisor is built with.
func TestKubeletVersionIsTheAPIRelease(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api (v0\.\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("k8s.io/api not in go.mod")
	}
	if want := "v1." + strings.TrimPrefix(string(m[1]), "v0."); want != KubeletVersion {
		t.Errorf("KubeletVersion %s, but k8s.io/api is %s: want %s", KubeletVersion, m[1], want)
	}
}

// ca signs test certificates.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *ca {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key in PEM for cn, for a client or for
// the 127.0.0.1 server.
func (c *ca) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// apiserver is a TLS server on 127.0.0.1 that answers GET /api/v1/nodes/X
// with an empty Node and records who asked.
type apiserver struct {
	*httptest.Server
	mu      sync.Mutex
	clients []string // client certificate CNs, or "Bearer <token>"
}

func newAPIServer(t *testing.T, c *ca) *apiserver {
	s := &apiserver{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := r.Header.Get("Authorization")
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			who = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		s.mu.Lock()
		s.clients = append(s.clients, who)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"node1","uid":"u1"}}`))
	}))
	certPEM, keyPEM := c.issue(t, "127.0.0.1", true)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.cert)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *apiserver) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clients) == 0 {
		return ""
	}
	return s.clients[len(s.clients)-1]
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	// As a certificate manager rotates: a new file renamed into place.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A kubeconfig like kubeadm's kubelet.conf, naming a client certificate
// file: the client uses the certificate the file holds now.
func TestClientCertificateFileReloaded(t *testing.T) {
	c := newCA(t)
	srv := newAPIServer(t, c)
	dir := t.TempDir()
	pemFile := filepath.Join(dir, "kubelet-client-current.pem")
	certA, keyA := c.issue(t, "system:node:a", false)
	writeFile(t, pemFile, append(certA, keyA...))
	caFile := filepath.Join(dir, "ca.crt")
	writeFile(t, caFile, c.pem)
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	writeFile(t, kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    certificate-authority: ca.crt
    server: `+srv.URL+`
contexts:
- name: system:node:a@kubernetes
  context: {cluster: kubernetes, user: system:node:a}
current-context: system:node:a@kubernetes
users:
- name: system:node:a
  user:
    client-certificate: `+pemFile+`
    client-key: `+pemFile+`
`))
	m, err := New(Options{Kubeconfig: kubeconfig, NodeName: "a", Pods: newFixture(t).store})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := m.connect()
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		if _, err := cl.cs.CoreV1().Nodes().Get(t.Context(), "node1", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get()
	if who := srv.last(); who != "system:node:a" {
		t.Fatalf("first request as %q", who)
	}
	if cl.changed() {
		t.Error("kubeconfig reported changed")
	}

	certB, keyB := c.issue(t, "system:node:rotated", false)
	writeFile(t, pemFile, append(certB, keyB...))
	// A new connection (client-go reads the files at most once a second;
	// on its own it also closes its connections within 5 minutes of a
	// change).
	eventually(t, "the rotated certificate used", func() bool {
		srv.CloseClientConnections()
		get()
		return srv.last() == "system:node:rotated"
	})
}

// A token kubeconfig that does not exist yet (kubeadm writes it later):
// connect fails until it does, then the token is sent; a rewritten file is
// seen as a change.
func TestTokenKubeconfigLaterAndChanged(t *testing.T) {
	c := newCA(t)
	srv := newAPIServer(t, c)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	m, err := New(Options{Kubeconfig: kubeconfig, NodeName: "a", Pods: newFixture(t).store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.connect(); err == nil {
		t.Fatal("connected without a kubeconfig")
	}
	caData := base64(c.pem)
	write := func(token string) {
		writeFile(t, kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`", certificate-authority-data: `+caData+`}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: `+token+`}}]
`))
	}
	write("abc.def")
	cl, err := m.connect()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.cs.CoreV1().Nodes().Get(t.Context(), "node1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if who := srv.last(); who != "Bearer abc.def" {
		t.Errorf("request with %q", who)
	}
	write("ghi.jkl")
	if !cl.changed() {
		t.Error("a rewritten kubeconfig not seen as changed")
	}
}

func base64(b []byte) string { return b64.StdEncoding.EncodeToString(b) }
