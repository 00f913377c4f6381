package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/testcerts"
)

// clientCert is a client certificate from ca for the user cn in groups.
func clientCert(t *testing.T, ca *testcerts.CA, cn string, groups ...string) tls.Certificate {
	t.Helper()
	p, err := ca.ClientInGroups(t.TempDir(), cn, groups...)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// replaceFile writes content beside path and renames it in, as an
// operator's tool does.
func replaceFile(t *testing.T, path string, content []byte, mode os.FileMode) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, content, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tokenKubeconfig is a kubeconfig whose cluster CA is caFile and whose
// apiserver nobody serves.
func tokenKubeconfig(t *testing.T, dir, caFile string) string {
	t.Helper()
	p := filepath.Join(dir, "kubelet.conf")
	if err := testcerts.Kubeconfig(p, caFile, "{token: abc}"); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuthHardeningRefusedAtStart: podvisor does not start (exit 2,
// saying why and what to do instead) with AlwaysAllow and the token
// webhook, with a policy that allows every authenticated user, or with a
// client CA file others can write (naming the file).
func TestAuthHardeningRefusedAtStart(t *testing.T) {
	requireEnv(t)
	t.Parallel()
	dir, err := os.MkdirTemp("", "pv-e2e-authh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	own, err := testcerts.NewCA(dir, "podvisor-clients")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := testcerts.NewCA(dir, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	server, err := own.Server(dir, "server", net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := tokenKubeconfig(t, dir, cluster.CertFile)
	everyone := filepath.Join(dir, "everyone.yaml")
	writeFile(t, everyone, "apiVersion: podvisor.io/v1alpha1\nkind: AuthorizationPolicy\ncreate:\n- group: system:authenticated\n")
	openCA := filepath.Join(dir, "open-ca.crt")
	replaceFile(t, openCA, own.PEM(), 0o664)

	tlsArgs := func(ca string) []string {
		return []string{"--tls-bind-address", "127.0.0.1:1", "--tls-cert-file", server.CertFile, "--tls-private-key-file", server.KeyFile, "--client-ca-file", ca}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"AlwaysAllow with the token webhook",
			append(tlsArgs(own.CertFile), "--kubeconfig", kubeconfig, "--authorization-mode", "AlwaysAllow", "--authentication-token-webhook"),
			"--authorization-mode AlwaysAllow with --authentication-token-webhook: every token the apiserver vouches for (every service account of every namespace, every node) could exec into this node's pods, etcd's and kube-apiserver's included. Use --authorization-mode Webhook"},
		{"policy allowing every authenticated user",
			append(tlsArgs(own.CertFile), "--authorization-policy-file", everyone),
			"--authorization-policy-file: " + everyone + `:4: create[0].group: "system:authenticated" is every authenticated user`},
		{"group-writable client CA",
			tlsArgs(openCA),
			"--client-ca-file: " + openCA + " is not trusted: " + openCA + ": mode 0664 is group- or world-writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			state := filepath.Join(sub, "state")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			// Every path the test's own: were the check gone, podvisor
			// would start, on the test's containerd.
			args := append([]string{"run", "--state-dir", state, "--run-dir", filepath.Join(sub, "run"), "--log-dir", filepath.Join(sub, "logs"),
				"--manifests", filepath.Join(sub, "manifests"), "--images-dir", filepath.Join(sub, "images"), "--cert-dir", filepath.Join(sub, "pki"),
				"--containerd-address", env.Address, "--containerd-namespace", "e2e-" + randHex(4), "--cni-conf-dir", env.CNIConfDir, "--cni-bin-dir", env.CNIBinDir,
				"--node-name", node, "--node-ip", "127.0.0.1", "--eviction-hard", "none"}, tc.args...)
			out, err := exec.CommandContext(ctx, podvisorBin, args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("podvisor run: %v\n%s\nwant exit 2 and %q", err, out, tc.want)
			}
			if _, err := os.Stat(state); err == nil {
				t.Error("podvisor created its state dir before refusing")
			}
		})
	}
}

// TestAuthHardeningClientCAReload: while podvisor serves its TLS port
// (Policy, with a --kubeconfig), the client CA file is replaced by the
// cluster CA re-issued with the same key (a renewed cluster CA, not the
// same bytes): the reload is refused, the log says why, the previous
// CA's clients still connect and the cluster CA's do not. The cluster CA
// itself is refused the same way; a CA of its own is then taken.
func TestAuthHardeningClientCAReload(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The CAs' own files are not podvisor's: it reads the copies the test
	// replaces.
	pki := t.TempDir()
	own, err := testcerts.NewCA(pki, "podvisor-clients")
	must(err)
	cluster, err := testcerts.NewCA(pki, "kubernetes")
	must(err)
	renewed, err := testcerts.NewCAWith(pki, "kubernetes-renewed", testcerts.CAOptions{Key: cluster.Key()})
	must(err)
	next, err := testcerts.NewCA(pki, "podvisor-clients-2")
	must(err)
	clusterFile := filepath.Join(d.dir, "cluster-ca.crt")
	replaceFile(t, clusterFile, cluster.PEM(), 0o644)
	kubeconfig := tokenKubeconfig(t, d.dir, clusterFile)

	serverCA, err := testcerts.NewCA(d.dir, "serving")
	must(err)
	server, err := serverCA.Server(d.dir, "server", net.IPv4(127, 0, 0, 1))
	must(err)
	clientCA := filepath.Join(d.dir, "client-ca.crt")
	replaceFile(t, clientCA, own.PEM(), 0o644)
	policy := filepath.Join(d.dir, "policy.yaml")
	writeFile(t, policy, "apiVersion: podvisor.io/v1alpha1\nkind: AuthorizationPolicy\nget:\n- user: admin\n- group: system:masters\n")

	addr := freePort(t)
	d.extraArgs = append(d.extraArgs, "--tls-bind-address", addr,
		"--tls-cert-file", server.CertFile, "--tls-private-key-file", server.KeyFile, "--client-ca-file", clientCA,
		"--kubeconfig", kubeconfig, "--rotate-certificates=false", "--authorization-mode", "Policy", "--authorization-policy-file", policy)
	d.start()

	roots := caPool(t, serverCA)
	// get answers how a GET /pods with cert went: "" when 200.
	get := func(cert tls.Certificate) string {
		// TLS 1.2: a refused certificate fails the handshake itself.
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MaxVersion: tls.VersionTLS12}}}
		resp, err := hc.Get("https://" + addr + "/pods")
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	}
	admin := clientCert(t, own, "admin")
	node := clientCert(t, renewed, "system:node:other", "system:masters")
	d.poll("admin's GET /pods over TLS", 30*time.Second, func() (bool, string) {
		e := get(admin)
		return e == "", e
	})

	for i, bad := range []struct {
		ca   *testcerts.CA
		how  string
		cert tls.Certificate
	}{
		{renewed, `kubernetes-renewed\" has the public key of the cluster CA`, node},
		{cluster, `kubernetes\" has the public key of the cluster CA`, clientCert(t, cluster, "admin")},
	} {
		replaceFile(t, clientCA, bad.ca.PEM(), 0o644)
		// The file is read again at the next handshake.
		if e := get(admin); e != "" {
			t.Fatalf("%d: admin of the previous CA after the refused reload: %s\n%s", i, e, d.logTail())
		}
		d.waitLogLine("refusing the changed --client-ca-file", "the previous one stays in use",
			"--client-ca-file "+clientCA+" holds the cluster CA of --kubeconfig "+kubeconfig, bad.how)
		if e := get(bad.cert); e == "" {
			t.Errorf("%d: a client of the refused cluster CA was let in", i)
		}
		if e := get(admin); e != "" {
			t.Errorf("%d: admin of the previous CA: %s", i, e)
		}
	}

	// A CA of its own is taken from the next handshake.
	replaceFile(t, clientCA, next.PEM(), 0o644)
	nextAdmin := clientCert(t, next, "admin")
	d.poll("the new CA's admin let in", 20*time.Second, func() (bool, string) {
		e := get(nextAdmin)
		return e == "", e
	})
	d.waitLogLine("reloaded the --client-ca-file")
}
