package doctor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/testcerts"
)

func TestAPIServer(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcerts.NewCA(dir, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Client(dir, "system:node:n") // valid for 24h; client-go reads it only for an https server
	if err != nil {
		t.Fatal(err)
	}
	status := http.StatusOK
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	kc := filepath.Join(dir, "kubelet.conf")
	write(t, kc, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: `+srv.URL+`, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {client-certificate: `+pair.CertFile+`, client-key: `+pair.KeyFile+`}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, 0o600)
	o := Options{Kubeconfig: kc}
	o.defaults()
	fs := checkAPIServer(context.Background(), o)
	want(t, fs, "apiserver", Warn, "the client certificate expires at")
	want(t, fs, "apiserver", OK, srv.URL, "200")

	o.Now = func() time.Time { return time.Now().Add(48 * time.Hour) }
	status = http.StatusUnauthorized
	fs = checkAPIServer(context.Background(), o)
	want(t, fs, "apiserver", Fail, "the client certificate is valid from")
	want(t, fs, "apiserver", Fail, "refuses the node's credentials")

	o.Now = func() time.Time { return time.Now().Add(-30 * 24 * time.Hour) }
	srv.Close()
	fs = checkAPIServer(context.Background(), o)
	want(t, fs, "apiserver", Warn, "unreachable")

	os.Remove(kc)
	want(t, checkAPIServer(context.Background(), o), "apiserver", Fail, "--kubeconfig "+kc)
	if fs := checkAPIServer(context.Background(), Options{}); len(fs) != 0 {
		t.Errorf("no --kubeconfig: %+v", fs)
	}
}
