package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
)

func TestDirLayout(t *testing.T) {
	d := Dir("/var/lib/kubelet/pki")
	for got, want := range map[string]string{
		d.ClientCurrent():  "/var/lib/kubelet/pki/kubelet-client-current.pem",
		d.ServerCurrent():  "/var/lib/kubelet/pki/kubelet-server-current.pem",
		d.SelfSignedCert(): "/var/lib/kubelet/pki/kubelet.crt",
		d.SelfSignedKey():  "/var/lib/kubelet/pki/kubelet.key",
	} {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

// The store the manager writes to is the layout Dir names (kubelet's):
// <prefix>-current.pem links to a dated file beside it.
func TestStoreWritesDatedFileAndCurrentLink(t *testing.T) {
	d := Dir(t.TempDir())
	store, err := newFileStore(d, ClientPrefix, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := newCert(t, "system:node:n1", time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := store.Update(c.certPEM, c.keyPEM); err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(d.ClientCurrent())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(target) != string(d) || !regexp.MustCompile(`^kubelet-client-\d{4}(-\d{2}){5}\.pem$`).MatchString(filepath.Base(target)) {
		t.Errorf("kubelet-client-current.pem -> %s, want kubelet-client-<date>.pem in %s", target, d)
	}
	pair, err := tls.LoadX509KeyPair(d.ClientCurrent(), d.ClientCurrent())
	if err != nil {
		t.Fatalf("kubelet-client-current.pem is not a kubeconfig's client-certificate and client-key: %v", err)
	}
	if pair.Leaf.SerialNumber.Cmp(c.cert.SerialNumber) != 0 {
		t.Error("kubelet-client-current.pem holds another certificate")
	}
}

func TestSelfSignedNamesAndReuse(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "pki"))
	o := SelfSignedOptions{Host: "node1", IPs: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"box.example"}}
	now := time.Now()
	reused, err := SelfSigned(d, o, now)
	if err != nil || reused {
		t.Fatalf("first SelfSigned = %v, %v; want a new pair", reused, err)
	}
	pair, err := tls.LoadX509KeyPair(d.SelfSignedCert(), d.SelfSignedKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node1", "127.0.0.1", "box.example"} {
		if err := pair.Leaf.VerifyHostname(n); err != nil {
			t.Errorf("certificate does not name %s: %v", n, err)
		}
	}
	if life := pair.Leaf.NotAfter.Sub(pair.Leaf.NotBefore); life != 365*24*time.Hour {
		t.Errorf("lifetime %v, want kubelet's year", life)
	}
	// The chain holds the pair's own CA: a client can trust it.
	if len(pair.Certificate) != 2 {
		t.Errorf("%d certificates in kubelet.crt, want the certificate and its CA", len(pair.Certificate))
	}
	if fi, err := os.Stat(d.SelfSignedKey()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kubelet.key: %v, %v; want mode 0600", fi.Mode(), err)
	}
	before, _ := os.ReadFile(d.SelfSignedCert())

	// A restart serves the same certificate.
	if reused, err := SelfSigned(d, o, now.Add(time.Hour)); err != nil || !reused {
		t.Fatalf("second SelfSigned = %v, %v; want the pair reused", reused, err)
	}
	if after, _ := os.ReadFile(d.SelfSignedCert()); !bytes.Equal(before, after) {
		t.Error("kubelet.crt rewritten although it was reused")
	}

	// A name it lacks, or its expiry, makes a new one.
	for name, tc := range map[string]struct {
		o   SelfSignedOptions
		now time.Time
	}{
		"new IP":  {SelfSignedOptions{Host: "node1", IPs: []net.IP{net.ParseIP("10.0.0.9")}}, now},
		"renamed": {SelfSignedOptions{Host: "node2"}, now},
		"expired": {o, now.Add(366 * 24 * time.Hour)},
	} {
		if reused, err := SelfSigned(d, tc.o, tc.now); err != nil || reused {
			t.Errorf("%s: SelfSigned = %v, %v; want a new pair", name, reused, err)
		}
		if after, _ := os.ReadFile(d.SelfSignedCert()); bytes.Equal(before, after) {
			t.Errorf("%s: kubelet.crt not rewritten", name)
		}
		before, _ = os.ReadFile(d.SelfSignedCert())
	}
}

func TestSelfSignedReplacesUnreadablePair(t *testing.T) {
	d := Dir(t.TempDir())
	os.WriteFile(d.SelfSignedCert(), []byte("garbage"), 0o644)
	os.WriteFile(d.SelfSignedKey(), []byte("garbage"), 0o600)
	if reused, err := SelfSigned(d, SelfSignedOptions{Host: "node1"}, time.Now()); err != nil || reused {
		t.Fatalf("SelfSigned = %v, %v; want a new pair", reused, err)
	}
	if _, err := tls.LoadX509KeyPair(d.SelfSignedCert(), d.SelfSignedKey()); err != nil {
		t.Fatal(err)
	}
}

func TestInitialPair(t *testing.T) {
	dir := t.TempDir()
	c := newCert(t, "system:node:n1", time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	certFile, keyFile := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	for _, tc := range []struct {
		name string
		cfg  rest.Config
		want bool
	}{
		{"embedded, as kubeadm's kubelet.conf", rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: c.certPEM, KeyData: c.keyPEM}}, true},
		// Files are the store's fallback, as kubelet's: no initial pair.
		{"files", rest.Config{TLSClientConfig: rest.TLSClientConfig{CertFile: certFile, KeyFile: keyFile}}, false},
		{"a token", rest.Config{BearerToken: "abc.def"}, false},
	} {
		cert, key, err := initialPair(&tc.cfg)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := cert != nil && key != nil; got != tc.want {
			t.Errorf("%s: initial pair %v, want %v", tc.name, got, tc.want)
		}
	}
	other := newCert(t, "x", time.Now(), time.Now().Add(time.Hour))
	if _, _, err := initialPair(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: c.certPEM, KeyData: other.keyPEM}}); err == nil {
		t.Error("a key of another certificate was taken")
	}
}

// With a bootstrap kubeconfig, a kubeconfig missing or with an expired
// certificate is written naming kubelet-client-current.pem, with the
// bootstrap kubeconfig's apiserver and CA; a valid one is kept.
func TestBootstrapKubeconfig(t *testing.T) {
	dir := t.TempDir()
	ca := newCert(t, "ca", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	boot := filepath.Join(dir, "bootstrap-kubelet.conf")
	writeKubeconfig(t, boot, &clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"}, ca.certPEM)
	kc := filepath.Join(dir, "kubelet.conf")
	c := &Client{o: Options{Dir: Dir(filepath.Join(dir, "pki")), Kubeconfig: kc, BootstrapKubeconfig: boot, NodeName: "n1"}.withDefaults()}

	if ok, _ := kubeconfigValid(kc, time.Now()); ok {
		t.Fatal("a missing kubeconfig is valid")
	}
	boot1, err := c.bootstrapKubeconfig(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if pemPath := filepath.Join(dir, "pki", "kubelet-client-current.pem"); boot1 == nil || boot1.CertFile != pemPath || boot1.BearerToken != "" || boot1.Host != "https://127.0.0.1:6443" {
		t.Errorf("bootstrapped config %+v, want the bootstrap apiserver with %s only", boot1, pemPath)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	auth, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
	pemPath := filepath.Join(dir, "pki", "kubelet-client-current.pem")
	if auth.ClientCertificate != pemPath || auth.ClientKey != pemPath || auth.Token != "" {
		t.Errorf("written kubeconfig authenticates with %+v, want %s only", auth, pemPath)
	}
	if cluster.Server != "https://127.0.0.1:6443" || !bytes.Equal(cluster.CertificateAuthorityData, ca.certPEM) {
		t.Errorf("written kubeconfig's cluster %s with CA %q, want the bootstrap kubeconfig's", cluster.Server, cluster.CertificateAuthorityData)
	}

	// Once the pair exists and is valid, the kubeconfig is kept.
	valid := newCert(t, "system:node:n1", time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	store, _ := newFileStore(Dir(filepath.Join(dir, "pki")), ClientPrefix, "", "")
	if _, err := store.Update(valid.certPEM, valid.keyPEM); err != nil {
		t.Fatal(err)
	}
	if ok, why := kubeconfigValid(kc, time.Now()); !ok {
		t.Fatalf("kubeconfig naming a valid pair is not valid: %s", why)
	}
	os.WriteFile(kc, append(readFile(t, kc), "\n# kept\n"...), 0o600)
	if cfg, err := c.bootstrapKubeconfig(time.Now()); err != nil || cfg != nil {
		t.Fatalf("bootstrapKubeconfig with a valid kubeconfig = %v, %v", cfg, err)
	}
	if !strings.Contains(string(readFile(t, kc)), "# kept") {
		t.Error("a valid kubeconfig was rewritten")
	}

	// An expired certificate makes it bootstrap again.
	if ok, why := kubeconfigValid(kc, time.Now().Add(2*time.Hour)); ok || !strings.Contains(why, "valid until") {
		t.Errorf("kubeconfig with an expired certificate: valid %v (%s)", ok, why)
	}
	embedded := filepath.Join(dir, "embedded.conf")
	writeKubeconfig(t, embedded, &clientcmdapi.AuthInfo{ClientCertificateData: valid.certPEM, ClientKeyData: valid.keyPEM}, ca.certPEM)
	if ok, why := kubeconfigValid(embedded, time.Now()); !ok {
		t.Errorf("kubeconfig with an embedded valid certificate: not valid (%s)", why)
	}
}

type testCert struct {
	cert            *x509.Certificate
	certPEM, keyPEM []byte
}

func newCert(t *testing.T, cn string, notBefore, notAfter time.Time) testCert {
	t.Helper()
	return newCertFor(t, pkix.Name{CommonName: cn}, notBefore, notAfter)
}

func newCertFor(t *testing.T, subject pkix.Name, notBefore, notAfter time.Time) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: keyPEM}
}

func writeKubeconfig(t *testing.T, path string, auth *clientcmdapi.AuthInfo, ca []byte) {
	t.Helper()
	err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://127.0.0.1:6443", CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"a": auth},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "a"}},
		CurrentContext: "x",
	}, path)
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every request but a watch is cut after the bound.
func TestBoundedSparesWatches(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("watch") == "true" {
			// An event after three times the bound: the watch is still there.
			select {
			case <-time.After(600 * time.Millisecond):
				io.WriteString(w, "event")
			case <-r.Context().Done():
			}
			return
		}
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: bounded{http.DefaultTransport, 200 * time.Millisecond}}
	resp, err := hc.Get(srv.URL + "/apis/x?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "event" {
		t.Errorf("watch: %q, %v", b, err)
	}
	resp, err = hc.Get(srv.URL + "/apis/x")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request that hangs: %v, want the deadline", err)
	}
}
