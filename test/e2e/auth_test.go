package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/testcerts"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tlsPolicy is TestTLSListener's policy file: admin reads and execs,
// reader only reads, anyone in group ops execs.
const tlsPolicy = `apiVersion: podvisor.io/v1alpha1
kind: AuthorizationPolicy
get:
- user: admin
- user: reader
create:
- user: admin
- group: ops
`

// tlsPolicyArgs writes tlsPolicy into d's directory and returns the flag
// that names it.
func tlsPolicyArgs(t *testing.T, d *daemon) []string {
	t.Helper()
	path := filepath.Join(d.dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(tlsPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--authorization-policy-file", path}
}

// checkTLSPolicy, on TestTLSListener's standalone podvisor (no apiserver:
// --authorization-mode Policy by default): certificates from the client
// CA are allowed what the policy file says and nothing more, and each
// exec is logged with its user and decision.
func checkTLSPolicy(t *testing.T, d *daemon, addr string, ca *testcerts.CA) {
	cert := func(name string, groups ...string) *api.Client {
		t.Helper()
		c, _ := tlsClient(t, d, addr, ca, name, groups...)
		return c
	}
	ctx := t.Context()
	exec := func(c *api.Client) (string, error) {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := c.Exec(ctx, "default/remote-"+node, []string{"echo", "exec-ok"}, api.StreamOptions{Container: "main", Stdout: &out, Stderr: io.Discard})
		return out.String(), err
	}
	forbidden := func(err error, user string) bool {
		var ae *api.APIError
		return errors.As(err, &ae) && ae.Code == http.StatusForbidden &&
			strings.Contains(err.Error(), "Forbidden (user="+user+", verb=create, resource=nodes, subresource=proxy)")
	}

	admin := cert("admin")
	if out, err := exec(admin); err != nil || strings.TrimSpace(out) != "exec-ok" {
		t.Errorf("admin (in create): exec: %q %v\n%s", out, err, d.logTail())
	}
	ops := cert("opsperson", "dev", "ops")
	if out, err := exec(ops); err != nil || strings.TrimSpace(out) != "exec-ok" {
		t.Errorf("opsperson in O=ops (in create): exec: %q %v", out, err)
	}
	reader := cert("reader")
	if _, err := reader.Pods(ctx); err != nil {
		t.Errorf("reader (in get): GET /pods: %v", err)
	}
	if _, err := exec(reader); !forbidden(err, "reader") {
		t.Errorf("reader (get only): exec: %v, want 403 Forbidden", err)
	}
	stranger := cert("stranger", "dev")
	if _, err := exec(stranger); !forbidden(err, "stranger") {
		t.Errorf("stranger (not in the policy): exec: %v, want 403 Forbidden", err)
	}
	var ae *api.APIError
	if _, err := stranger.Pods(ctx); !errors.As(err, &ae) || ae.Code != http.StatusForbidden {
		t.Errorf("stranger: GET /pods: %v, want 403", err)
	}
	// pprof is not on the TLS port without --enable-profiling-handler.
	pair, err := tls.LoadX509KeyPair(filepath.Join(d.dir, "admin.crt"), filepath.Join(d.dir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool(t, ca), Certificates: []tls.Certificate{pair}}}}
	if resp, err := hc.Get("https://" + addr + "/debug/pprof/"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ as admin: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	d.waitLogLine(`msg="remote API session"`, "action=exec", "pod=remote", "user=stranger", "groups=[dev]", "authn=x509", "decision=forbidden")
	d.waitLogLine(`msg="remote API session"`, "action=exec", "pod=remote", "user=admin", "authn=x509", "decision=allowed")
}

// TestTLSRefusedAtStart: a client CA that is the kubeconfig cluster's CA
// without Webhook authorization, and a malformed policy file, refuse the
// start (exit 2, before the state dir exists), saying why.
func TestTLSRefusedAtStart(t *testing.T) {
	requireEnv(t)
	t.Parallel()
	dir := t.TempDir()
	cluster, err := testcerts.NewCA(dir, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	server, err := cluster.Server(dir, "server", net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	// A client certificate that need not exist, as in kubeadm's
	// kubelet.conf before the TLS bootstrap.
	if err := testcerts.Kubeconfig(kubeconfig, cluster.CertFile, "{client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem, client-key: /var/lib/kubelet/pki/kubelet-client-current.pem}"); err != nil {
		t.Fatal(err)
	}
	badPolicy := filepath.Join(dir, "policy.yaml")
	writeFile(t, badPolicy, tlsPolicy+"- cn: mallory\n")
	tlsArgs := []string{"--tls-bind-address", "127.0.0.1:1", "--tls-cert-file", server.CertFile, "--tls-private-key-file", server.KeyFile, "--client-ca-file", cluster.CertFile}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", kubeconfig, "--authorization-mode", "Policy"},
			"--client-ca-file " + cluster.CertFile + " holds the cluster CA of --kubeconfig " + kubeconfig + " (kubernetes): client CA is the cluster CA; with --authorization-mode Policy no apiserver decides who may do what, and every node's client certificate and every certificate a bootstrap token can have signed chains to that CA"},
		{[]string{"--kubeconfig", kubeconfig, "--authorization-mode", "AlwaysAllow"}, "holds the cluster CA of --kubeconfig"},
		{[]string{"--authorization-policy-file", badPolicy}, "--authorization-policy-file: " + badPolicy + ":9: create[2].cn: unknown field (want user, group)"},
		{[]string{"--authorization-policy-file", filepath.Join(dir, "missing.yaml")}, "--authorization-policy-file: open " + filepath.Join(dir, "missing.yaml") + ": no such file or directory"},
		{[]string{"--authorization-mode", "Webhook"}, "--authorization-mode Webhook needs --kubeconfig"},
	} {
		state := filepath.Join(dir, "state")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		args := append([]string{"run", "--state-dir", state, "--run-dir", filepath.Join(dir, "run"), "--log-dir", filepath.Join(dir, "logs")}, tlsArgs...)
		out, err := exec.CommandContext(ctx, podvisorBin, append(args, tc.args...)...).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("podvisor run %q: %v\n%s\nwant exit 2 and %q", tc.args, err, out, tc.want)
		}
		if _, err := os.Stat(state); err == nil {
			t.Errorf("podvisor run %q created its state dir before refusing", tc.args)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsWebhook, TestMirror's last step: podvisor restarted with its TLS port,
// bearer tokens (--authentication-token-webhook) and the default
// --authorization-mode Webhook. A ServiceAccount bound to nodes/proxy get
// only reads (GET /pods) and gets 403 from the SubjectAccessReview for
// exec; one bound to nodes/proxy create execs; a token the apiserver does
// not know is 401.
func (c *mirrorCluster) tlsWebhook(t *testing.T) {
	d := c.d
	ctx := t.Context()
	d.stop(syscall.SIGTERM)
	addr, ca := tlsPort(t, d, "tls-clients")
	d.extraArgs = append(d.extraArgs, "--authentication-token-webhook")
	d.start()

	const ns = "default"
	token := func(name string, verbs ...string) string {
		t.Helper()
		if _, err := c.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: verbs}}}
		if _, err := c.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
		if _, err := c.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := c.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader := token("node-reader", "get")
	execer := token("node-execer", "get", "create")

	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool(t, ca)}}}
	do := func(method, path, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, "https://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if method == http.MethodPost {
			// Kubernetes' streaming protocol, as kubectl asks for it.
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "SPDY/3.1")
			req.Header.Set("X-Stream-Protocol-Version", "v4.channel.k8s.io")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return resp.StatusCode, "" // the session's stream: not read
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	exec := "/exec/default/web-" + node + "/main?command=true&output=1"
	if code, body := do("GET", "/pods", reader); code != http.StatusOK {
		t.Errorf("reader: GET /pods: %d %s", code, body)
	}
	want := "Forbidden (user=system:serviceaccount:default:node-reader, verb=create, resource=nodes, subresource=proxy)"
	if code, body := do("POST", exec, reader); code != http.StatusForbidden || body != want {
		t.Errorf("reader: exec: %d %q, want 403 %q", code, body, want)
	}
	// The exec session starts: the filter let it through to the stream.
	if code, body := do("POST", exec, execer); code != http.StatusSwitchingProtocols {
		t.Errorf("execer: exec: %d %s, want 101\n%s", code, body, d.logTail())
	}
	if code, body := do("GET", "/pods", "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("unknown token: GET /pods: %d %s, want 401", code, body)
	}
	d.waitLogLine(`msg="remote API session"`, "action=exec", "user=system:serviceaccount:default:node-reader", "authn=token", "decision=forbidden")
	d.waitLogLine(`msg="remote API session"`, "action=exec", "user=system:serviceaccount:default:node-execer", "authn=token", "decision=allowed")
}
