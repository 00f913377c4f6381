package mirror

import (
	"crypto/tls"
	"path/filepath"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podvisor/podvisor/internal/kube"
)

// With Options.ClientCertificate (--rotate-certificates), the client
// presents its certificate, not the kubeconfig's; connect waits while
// there is none; a new one is reported as a change,
// once, and used once the connections are closed, as kubelet's
// certificate transport does.
func TestRotatedClientCertificate(t *testing.T) {
	c := newCA(t)
	srv := newAPIServer(t, c)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	writeFile(t, caFile, c.pem)
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	pemFile := filepath.Join(dir, "kubelet-client-current.pem")
	fileCert, fileKey := c.issue(t, "system:node:file", false)
	writeFile(t, pemFile, append(fileCert, fileKey...))
	writeFile(t, kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    certificate-authority: ca.crt
    server: `+srv.URL+`
contexts:
- name: default
  context: {cluster: kubernetes, user: node}
current-context: default
users:
- name: node
  user:
    client-certificate: `+pemFile+`
    client-key: `+pemFile+`
`))
	var current atomic.Pointer[tls.Certificate]
	pair := func(cn string) *tls.Certificate {
		certPEM, keyPEM := c.issue(t, cn, false)
		p, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	m, err := New(Options{Kubeconfig: kubeconfig, NodeName: "a", Pods: newFixture(t).store, ClientCertificate: current.Load})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.connect(); err == nil {
		t.Fatal("connected without a client certificate")
	}
	current.Store(pair("system:node:first"))
	cl, err := m.connect()
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		t.Helper()
		if _, err := cl.cs.CoreV1().Nodes().Get(t.Context(), "node1", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		return srv.last()
	}
	if who := get(); who != "system:node:first" {
		t.Fatalf("first request as %q, want system:node:first", who)
	}
	if cl.certChanged() {
		t.Error("a change reported before any rotation")
	}
	current.Store(pair("system:node:second"))
	if !cl.certChanged() {
		t.Fatal("the rotation was not reported")
	}
	if cl.certChanged() {
		t.Error("one rotation reported twice")
	}
	cl.closeAll()
	if who := get(); who != "system:node:second" {
		t.Errorf("request after the rotation as %q, want system:node:second", who)
	}

	// RESTConfig with the same certificate (the TLS port's reviews):
	// the first request after a rotation speaks with the new one.
	cfg, err := RESTConfig(kubeconfig, "test", current.Load)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kube.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review := func() string {
		t.Helper()
		if _, err := cs.CoreV1().Nodes().Get(t.Context(), "node1", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		return srv.last()
	}
	if who := review(); who != "system:node:second" {
		t.Errorf("review as %q, want system:node:second", who)
	}
	current.Store(pair("system:node:third"))
	if who := review(); who != "system:node:third" {
		t.Errorf("review after a rotation as %q, want system:node:third", who)
	}
}
