package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/test/controlplane"
	"github.com/podvisor/podvisor/test/testcerts"
)

// clientSigningDuration is kube-controller-manager's
// --cluster-signing-duration here. Its signer backdates NotBefore by 5
// minutes, so the certificate manager sees a lifetime of 6 minutes and
// renews at 70-90 % of it: from 48 s before the issue (at once) to 24 s
// after it, always well before the 60 s are up.
const clientSigningDuration = 60 * time.Second

// TestClientCertificateRotation runs podvisor with a kubelet.conf whose
// embedded client certificate expires 40 s after the test signs it, against
// a real control plane whose kube-controller-manager signs kubelet client
// certificates for 60 s and approves a node's own renewals (kubeadm's
// selfnodeclient binding): podvisor replaces the initial certificate at
// once, as kubelet does, and renews the issued one through a CSR before it
// expires, kubelet-client-current.pem linking to each new dated file; the
// mirror keeps working on the rotated certificate, through a restart of
// the apiserver once the initial certificate expired (new connections).
// Meanwhile a second podvisor joins with only a bootstrap token, as
// kubelet's TLS bootstrap.
func TestClientCertificateRotation(t *testing.T) {
	requireEnv(t)
	// Its own control plane on free ports: it runs beside the other
	// control-plane tests of this kind once TestKubeadmControlPlane (fixed
	// ports) is done.
	t.Parallel()
	dir, err := os.MkdirTemp("", "pv-e2e-certs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	cp := controlplane.Start(t, controlplane.Options{NodeName: node, Dir: dir})
	// kubeadm's binding: a node's CSR for its own client certificate is
	// approved by the csrapproving controller.
	cp.Kubectl(t, "create", "clusterrolebinding", "kubeadm:node-autoapprove-certificate-rotation",
		"--clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "--group=system:nodes")
	cp.StartControllerManager(t, "--cluster-signing-duration="+clientSigningDuration.String())
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// A second box joins with a bootstrap token, as kubeadm join: the
	// token Secret and kubeadm's bootstrap RBAC.
	joiner := startBootstrapJoin(t, cp, cs)

	initial := shortNodeCert(t, cp, 40*time.Second)
	kubeconfig := filepath.Join(dir, "kubelet-short.conf")
	writeEmbeddedKubeconfig(t, cp, kubeconfig, initial)

	// Its remote API serves a certificate issued through a kubelet-serving
	// CSR (--rotate-server-certificates).
	tlsAddr := freePort(t)
	d := newDaemon(t, "--kubeconfig", kubeconfig,
		"--tls-bind-address", tlsAddr, "--client-ca-file", filepath.Join(cp.PKIDir, "ca.crt"), "--rotate-server-certificates")
	current := filepath.Join(d.dir, "pki", "kubelet-client-current.pem")
	c := &mirrorCluster{d: d, cp: cp, cs: cs}
	d.start()
	d.writeManifest("web.yaml", sleeperManifest("web", 1, "sleep 3600"))
	local := d.waitPod("web-"+node, 60*time.Second, "Running", running)
	c.waitMirrorLike(t, local, 30*time.Second)

	checkServingCSR(t, c, tlsAddr)

	// The initial certificate is replaced at once by one the controller
	// manager issued.
	var first storedCert
	d.poll("kubelet-client-current.pem issued by the controller manager", 30*time.Second, func() (bool, string) {
		first = readStoredCert(current)
		if first.err != nil {
			return false, first.err.Error()
		}
		return first.cert.SerialNumber.Cmp(initial.cert.SerialNumber) != 0, "still the initial certificate"
	})
	if got := first.cert.NotAfter.Sub(first.cert.NotBefore); got != clientSigningDuration+5*time.Minute {
		t.Errorf("issued certificate lives %v, want %v (--cluster-signing-duration plus the signer's 5 minutes of backdating)", got, clientSigningDuration+5*time.Minute)
	}

	// Then renewed before it expires.
	var second storedCert
	d.poll("kubelet-client-current.pem renewed", clientSigningDuration, func() (bool, string) {
		second = readStoredCert(current)
		if second.err != nil {
			return false, second.err.Error()
		}
		return second.cert.SerialNumber.Cmp(first.cert.SerialNumber) != 0, "still " + first.target
	})
	t.Logf("renewed: %s (NotAfter %s) replaced by %s (NotAfter %s), %s before expiry",
		filepath.Base(first.target), first.cert.NotAfter.Format(time.TimeOnly), filepath.Base(second.target),
		second.cert.NotAfter.Format(time.TimeOnly), time.Until(first.cert.NotAfter).Round(time.Second))
	if renewedAt := time.Now(); !renewedAt.Before(first.cert.NotAfter) {
		t.Errorf("renewed at %v, after the certificate's NotAfter %v", renewedAt, first.cert.NotAfter)
	}
	if !second.cert.NotAfter.After(first.cert.NotAfter) {
		t.Errorf("renewed certificate's NotAfter %v, not later than %v", second.cert.NotAfter, first.cert.NotAfter)
	}
	if second.cert.Subject.CommonName != "system:node:"+node || len(second.cert.Subject.Organization) != 1 || second.cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("renewed certificate's subject %v, want CN=system:node:%s, O=system:nodes", second.cert.Subject, node)
	}
	for _, target := range []string{first.target, second.target} {
		if dir := filepath.Dir(target); dir != "." && dir != filepath.Dir(current) || !datedClientPEM.MatchString(filepath.Base(target)) {
			t.Errorf("kubelet-client-current.pem links to %q, want kubelet-client-<date>.pem beside it", target)
		}
	}
	// (Two renewals within a second share a name.)
	if _, err := os.Stat(filepath.Join(filepath.Dir(current), filepath.Base(first.target))); err != nil && second.target != first.target {
		t.Errorf("the replaced dated file: %v", err)
	}

	// Each through a CSR of the node, approved and issued.
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	issued := 0
	for _, r := range csrs.Items {
		if r.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || r.Spec.Username != "system:node:"+node {
			continue
		}
		approved := false
		for _, cond := range r.Status.Conditions {
			approved = approved || cond.Type == certificatesv1.CertificateApproved && cond.Status == v1.ConditionTrue
		}
		if approved && len(r.Status.Certificate) > 0 {
			issued++
		}
	}
	if issued < 2 {
		t.Errorf("%d approved and issued kubelet client CSRs of system:node:%s, want at least 2 (the initial certificate's replacement and a renewal)", issued, node)
	}

	// Once the kubeconfig's own certificate expired, the mirror can only
	// work on a rotated one: the apiserver's restart drops every
	// connection, and the lease and a new pod's status still arrive.
	d.poll("the kubeconfig's certificate to expire", time.Until(initial.cert.NotAfter)+5*time.Second, func() (bool, string) {
		return time.Now().After(initial.cert.NotAfter), "valid until " + initial.cert.NotAfter.String()
	})
	cp.StopAPIServer(t)
	cp.StartAPIServer(t)
	restarted := time.Now()
	// As TestMirror: the controller manager started before the outage
	// may never catch up, and its watches would hold the apiserver's
	// final stop.
	cp.RestartControllerManager(t)
	d.poll("the lease renewed after the apiserver's restart", 30*time.Second, func() (bool, string) {
		l, err := cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(restarted), fmt.Sprintf("renewTime %v", l.Spec.RenewTime)
	})
	d.writeManifest("after.yaml", sleeperManifest("after", 1, "sleep 3600"))
	after := d.waitPod("after-"+node, 60*time.Second, "Running", running)
	c.waitMirrorLike(t, after, 30*time.Second)

	joiner.check(t)
}

// checkServingCSR approves the node's kubelet-serving CSR, as an admin
// does (kube-controller-manager never approves them), and sees the remote
// API serve the certificate the controller manager issued for the node's
// name and --node-ip.
func checkServingCSR(t *testing.T, c *mirrorCluster, addr string) {
	t.Helper()
	var name string
	c.d.poll("the node's kubelet-serving CSR", 30*time.Second, func() (bool, string) {
		csrs, err := c.cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, r := range csrs.Items {
			if r.Spec.SignerName == certificatesv1.KubeletServingSignerName && r.Spec.Username == "system:node:"+node {
				name = r.Name
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d CSRs, none for %s", len(csrs.Items), certificatesv1.KubeletServingSignerName)
	})
	// Not served before it is issued.
	roots := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(c.cp.PKIDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(ca)
	adminCfg, err := clientcmd.BuildConfigFromFlags("", c.cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := tls.X509KeyPair(adminCfg.CertData, adminCfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	dial := func() (*x509.Certificate, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	if _, err := dial(); err == nil {
		t.Error("the remote API served a certificate before the CSR was approved")
	}
	c.cp.Kubectl(t, "certificate", "approve", name)
	var leaf *x509.Certificate
	c.d.poll("the remote API to serve the issued certificate", 30*time.Second, func() (bool, string) {
		leaf, err = dial()
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if leaf.Subject.CommonName != "system:node:"+node || leaf.VerifyHostname(node) != nil {
		t.Errorf("served certificate for %v, DNS names %v; want system:node:%s naming %[3]s", leaf.Subject, leaf.DNSNames, node)
	}
	if _, err := os.Stat(filepath.Join(c.d.dir, "pki", "kubelet-server-current.pem")); err != nil {
		t.Errorf("kubelet-server-current.pem: %v", err)
	}
}

// bootstrapJoin is a podvisor that joined with a bootstrap token.
type bootstrapJoin struct {
	d          *daemon
	cs         kubernetes.Interface
	kubeconfig string
}

// joinNode is the node that joins with a bootstrap token.
const joinNode = "joiner"

// startBootstrapJoin creates a bootstrap token and kubeadm's bootstrap RBAC,
// and starts a podvisor for joinNode with only --bootstrap-kubeconfig.
func startBootstrapJoin(t *testing.T, cp *controlplane.ControlPlane, cs kubernetes.Interface) *bootstrapJoin {
	t.Helper()
	const id, secret = "abcdef", "0123456789abcdef"
	_, err := cs.CoreV1().Secrets("kube-system").Create(t.Context(), &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{
			"token-id": id, "token-secret": secret,
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              "system:bootstrappers:kubeadm:default-node-token",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	group := "--group=system:bootstrappers:kubeadm:default-node-token"
	cp.Kubectl(t, "create", "clusterrolebinding", "kubeadm:kubelet-bootstrap", "--clusterrole=system:node-bootstrapper", group)
	cp.Kubectl(t, "create", "clusterrolebinding", "kubeadm:node-autoapprove-bootstrap",
		"--clusterrole=system:certificates.k8s.io:certificatesigningrequests:nodeclient", group)

	d := newDaemon(t)
	ca, err := os.ReadFile(filepath.Join(cp.PKIDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	boot := filepath.Join(d.dir, "bootstrap-kubelet.conf")
	err = clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"kubernetes": {Server: cp.Server, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"tls-bootstrap-token-user": {Token: id + "." + secret}},
		Contexts:       map[string]*clientcmdapi.Context{"tls-bootstrap-token-user@kubernetes": {Cluster: "kubernetes", AuthInfo: "tls-bootstrap-token-user"}},
		CurrentContext: "tls-bootstrap-token-user@kubernetes",
	}, boot)
	if err != nil {
		t.Fatal(err)
	}
	j := &bootstrapJoin{d: d, cs: cs, kubeconfig: filepath.Join(d.dir, "kubelet.conf")}
	d.extraArgs = append(d.extraArgs, "--node-name", joinNode, "--kubeconfig", j.kubeconfig, "--bootstrap-kubeconfig", boot)
	d.start()
	return j
}

// check: the kubeconfig podvisor wrote names kubelet-client-current.pem,
// which holds a certificate for system:node:joinNode issued through the
// bootstrap token's CSR, and the Node is registered and Ready.
func (j *bootstrapJoin) check(t *testing.T) {
	t.Helper()
	d := j.d
	d.t = t
	var n *v1.Node
	d.poll("the joined Node Ready", 60*time.Second, func() (bool, string) {
		var err error
		n, err = j.cs.CoreV1().Nodes().Get(t.Context(), joinNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeCondition(n, v1.NodeReady).Status == v1.ConditionTrue, "not Ready"
	})
	kc, err := clientcmd.LoadFromFile(j.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pemPath := filepath.Join(d.dir, "pki", "kubelet-client-current.pem")
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	if auth.ClientCertificate != pemPath || auth.ClientKey != pemPath || auth.Token != "" {
		t.Errorf("written kubeconfig's user %+v, want client-certificate and client-key %s", auth, pemPath)
	}
	stored := readStoredCert(pemPath)
	if stored.err != nil {
		t.Fatal(stored.err)
	}
	if stored.cert.Subject.CommonName != "system:node:"+joinNode {
		t.Errorf("joined certificate's subject %v, want CN=system:node:%s", stored.cert.Subject, joinNode)
	}
	csrs, err := j.cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bootstrapped := false
	for _, r := range csrs.Items {
		bootstrapped = bootstrapped || r.Spec.Username == "system:bootstrap:abcdef" && len(r.Status.Certificate) > 0
	}
	if !bootstrapped {
		t.Error("no CSR of the bootstrap token issued")
	}
}

// nodeCert is a client certificate and its key, PEM.
type nodeCert struct {
	cert            *x509.Certificate
	certPEM, keyPEM []byte
}

// shortNodeCert signs, with the cluster CA, a client certificate for
// system:node:<node> in system:nodes that expires after ttl.
func shortNodeCert(t *testing.T, cp *controlplane.ControlPlane, ttl time.Duration) nodeCert {
	t.Helper()
	caCerts, err := certutil.CertsFromFile(filepath.Join(cp.PKIDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.PrivateKeyFromFile(filepath.Join(cp.PKIDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(ttl),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCerts[0], key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return nodeCert{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: keyPEM}
}

// writeEmbeddedKubeconfig writes a kubeconfig of cp's apiserver with c
// embedded, as kubeadm writes kubelet.conf.
func writeEmbeddedKubeconfig(t *testing.T, cp *controlplane.ControlPlane, path string, c nodeCert) {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(cp.PKIDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	err = clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"kubernetes": {Server: cp.Server, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"node": {ClientCertificateData: c.certPEM, ClientKeyData: c.keyPEM}},
		Contexts:       map[string]*clientcmdapi.Context{"node": {Cluster: "kubernetes", AuthInfo: "node"}},
		CurrentContext: "node",
	}, path)
	if err != nil {
		t.Fatal(err)
	}
}

// datedClientPEM is the name of a client pair the store keeps (kubelet's).
var datedClientPEM = regexp.MustCompile(`^kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$`)

// storedCert is the pair a link of the cert dir points at.
type storedCert struct {
	target string
	cert   *x509.Certificate
	err    error
}

func readStoredCert(link string) storedCert {
	target, err := os.Readlink(link)
	if err != nil {
		return storedCert{err: err}
	}
	certs, err := certutil.CertsFromFile(link)
	if err != nil {
		return storedCert{err: err}
	}
	return storedCert{target: target, cert: certs[0]}
}

// --tls-bind-address without --tls-cert-file serves the self-signed pair
// podvisor writes in --cert-dir as kubelet does (kubelet.crt, naming the
// node and --node-ip), and a restarted podvisor serves the same one.
func TestTLSSelfSignedServing(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	ca, err := testcerts.NewCA(d.dir, "podvisor")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ca.Client(d.dir, "admin")
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	policy := filepath.Join(d.dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: podvisor.io/v1alpha1\nkind: AuthorizationPolicy\nget:\n- user: admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.extraArgs = append(d.extraArgs, "--tls-bind-address", addr, "--client-ca-file", ca.CertFile, "--authorization-policy-file", policy)
	crt := filepath.Join(d.dir, "pki", "kubelet.crt")
	served := func() *x509.Certificate {
		t.Helper()
		// Trusting kubelet.crt's own CA, the server is verified by name.
		c, err := api.NewTLSClient("https://"+addr, admin.CertFile, admin.KeyFile, crt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Pods(t.Context()); err != nil {
			t.Fatalf("GET /pods over the self-signed certificate: %v\n%s", err, d.logTail())
		}
		pair, err := tls.LoadX509KeyPair(crt, filepath.Join(d.dir, "pki", "kubelet.key"))
		if err != nil {
			t.Fatal(err)
		}
		ac, err := tls.LoadX509KeyPair(admin.CertFile, admin.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{Certificates: []tls.Certificate{ac}, InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		leaf := conn.ConnectionState().PeerCertificates[0]
		if !leaf.Equal(pair.Leaf) {
			t.Errorf("served certificate %v is not kubelet.crt's %v", leaf.SerialNumber, pair.Leaf.SerialNumber)
		}
		for _, name := range []string{node, "127.0.0.1"} {
			if err := leaf.VerifyHostname(name); err != nil {
				t.Errorf("served certificate: %v", err)
			}
		}
		return leaf
	}
	d.start()
	first := served()
	d.stop(syscall.SIGTERM)
	d.start()
	if again := served(); !again.Equal(first) {
		t.Errorf("after a restart podvisor serves %v, not the kept %v", again.SerialNumber, first.SerialNumber)
	}
}
