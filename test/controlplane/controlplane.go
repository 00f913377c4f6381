package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// documentationAddress stands in for the advertise address while kubeadm
// writes the PKI and kubeconfigs: kubeadm refuses a loopback one.
const documentationAddress = "192.0.2.2"

// ReadyTimeout bounds how long Start waits for the apiserver's /readyz.
const ReadyTimeout = 2 * time.Minute

// stopTimeout bounds how long Stop waits for a process after SIGTERM
// before it sends SIGKILL.
const stopTimeout = 30 * time.Second

// Options configure Start.
type Options struct {
	// NodeName is the node kubelet.conf authenticates as
	// (system:node:<NodeName>); "node1" when empty.
	NodeName string
	// Dir holds the PKI, kubeconfigs, etcd's data and the logs; a
	// t.TempDir() when empty.
	Dir string
	// APIServerArgs are added to kube-apiserver's flags (an audit log,
	// say), after kubeadm's; kube-apiserver takes the last of a repeated
	// flag.
	APIServerArgs []string
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	Binaries *Artifacts
	NodeName string
	// Dir holds everything below.
	Dir string
	// PKIDir is kubeadm's certificatesDir (ca.crt, apiserver.crt, etcd/...).
	PKIDir string
	// KubeconfigDir holds kubeadm's admin.conf, super-admin.conf,
	// kubelet.conf, controller-manager.conf and scheduler.conf, all
	// pointing at Server.
	KubeconfigDir string
	// AdminKubeconfig is admin.conf (group kubeadm:cluster-admins, bound to
	// cluster-admin as kubeadm init binds it).
	AdminKubeconfig string
	// SuperAdminKubeconfig is super-admin.conf (group system:masters).
	SuperAdminKubeconfig string
	// KubeletKubeconfig is kubelet.conf: a client certificate for
	// system:node:<NodeName>, group system:nodes.
	KubeletKubeconfig string
	// Server is the apiserver's URL, https://127.0.0.1:<port>.
	Server string
	// EtcdEndpoint is etcd's client URL, https://127.0.0.1:<port>.
	EtcdEndpoint string

	apiPort  int
	peerURL  string
	kcmExtra []string // StartControllerManager's extra flags
	apiExtra []string // Options.APIServerArgs

	mu       sync.Mutex // guards procs
	procs    []*process // running or exited by themselves, in start order
	stopOnce sync.Once
	stopErr  error
}

// process is one control-plane program we started.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when Wait returned
	err  error         // Wait's result, set before done is closed
}

// Start runs a control plane for t and stops it when t ends. It fails t
// when the control plane does not become ready within ReadyTimeout, with
// the tail of the failing program's log.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	cp := Prepare(t, opts)
	cp.Launch(t)
	return cp
}

// prepare chooses the ports and writes the PKI and the kubeconfigs.
func (cp *ControlPlane) prepare(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	apiPort, etcdPort, peerPort := ports[0], ports[1], ports[2]
	cp.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	cp.EtcdEndpoint = "https://127.0.0.1:" + strconv.Itoa(etcdPort)
	cp.peerURL = "https://127.0.0.1:" + strconv.Itoa(peerPort)
	cp.apiPort = apiPort
	return cp.kubeadm(ctx, apiPort)
}

// launch starts etcd and kube-apiserver and waits until the apiserver is
// ready.
func (cp *ControlPlane) launch(ctx context.Context) error {
	pki := func(name string) string { return filepath.Join(cp.PKIDir, name) }
	etcdDir := filepath.Join(cp.Dir, "etcd")
	peerURL := cp.peerURL
	// The flags of kubeadm's etcd manifest, on our ports and paths
	// (without --listen-metrics-urls: one port fewer to find).
	if err := cp.run("etcd", cp.Binaries.Etcd,
		"--advertise-client-urls="+cp.EtcdEndpoint,
		"--cert-file="+pki("etcd/server.crt"),
		"--client-cert-auth=true",
		"--data-dir="+etcdDir,
		"--feature-gates=InitialCorruptCheck=true",
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster="+cp.NodeName+"="+peerURL,
		"--key-file="+pki("etcd/server.key"),
		"--listen-client-urls="+cp.EtcdEndpoint,
		"--listen-peer-urls="+peerURL,
		"--name="+cp.NodeName,
		"--peer-cert-file="+pki("etcd/peer.crt"),
		"--peer-client-cert-auth=true",
		"--peer-key-file="+pki("etcd/peer.key"),
		"--peer-trusted-ca-file="+pki("etcd/ca.crt"),
		"--snapshot-count=10000",
		"--trusted-ca-file="+pki("etcd/ca.crt"),
		"--watch-progress-notify-interval=5s",
	); err != nil {
		return err
	}
	if err := cp.runAPIServer(); err != nil {
		return err
	}
	if err := cp.waitReady(ctx); err != nil {
		return err
	}
	// What kubeadm init does before its first use of admin.conf
	// (kubeconfig.EnsureAdminClusterRoleBinding), with super-admin.conf.
	_, err := cp.kubectl(ctx, cp.SuperAdminKubeconfig, "create", "clusterrolebinding", "kubeadm:cluster-admins",
		"--clusterrole=cluster-admin", "--group=kubeadm:cluster-admins")
	return err
}

// runAPIServer starts kube-apiserver with the flags of kubeadm's manifest,
// bound to 127.0.0.1. The advertise address stays the documentation one:
// kube-apiserver refuses a loopback address for the kubernetes Service's
// endpoints ("cannot use public IP 127.0.0.1 with endpoint reconciler"),
// and nothing here sends traffic to the advertised address.
func (cp *ControlPlane) runAPIServer() error {
	pki := func(name string) string { return filepath.Join(cp.PKIDir, name) }
	args := []string{
		"--advertise-address=" + documentationAddress,
		"--bind-address=127.0.0.1",
		"--allow-privileged=true",
		"--authorization-mode=Node,RBAC",
		"--client-ca-file=" + pki("ca.crt"),
		"--enable-admission-plugins=NodeRestriction",
		"--enable-bootstrap-token-auth=true",
		"--etcd-cafile=" + pki("etcd/ca.crt"),
		"--etcd-certfile=" + pki("apiserver-etcd-client.crt"),
		"--etcd-keyfile=" + pki("apiserver-etcd-client.key"),
		"--etcd-servers=" + cp.EtcdEndpoint,
		"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--proxy-client-cert-file=" + pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + pki("front-proxy-client.key"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--secure-port=" + strconv.Itoa(cp.apiPort),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki("sa.pub"),
		"--service-account-signing-key-file=" + pki("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/12",
		"--tls-cert-file=" + pki("apiserver.crt"),
		"--tls-private-key-file=" + pki("apiserver.key"),
		"--cert-dir=" + filepath.Join(cp.Dir, "apiserver-certs"),
	}
	return cp.run("kube-apiserver", cp.Binaries.KubeAPIServer, append(args, cp.apiExtra...)...)
}

// kubeadmConfig is the configuration the certs and kubeconfig phases read.
const kubeadmConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %[1]s
  bindPort: %[2]d
nodeRegistration:
  name: %[3]s
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %[4]s
certificatesDir: %[5]s
apiServer:
  certSANs:
  - 127.0.0.1
etcd:
  local:
    dataDir: %[6]s
`

// kubeadm writes the PKI and the kubeconfigs, then points the kubeconfigs
// at 127.0.0.1.
func (cp *ControlPlane) kubeadm(ctx context.Context, apiPort int) error {
	if err := os.MkdirAll(cp.KubeconfigDir, 0o700); err != nil {
		return err
	}
	cfg := filepath.Join(cp.Dir, "kubeadm.yaml")
	data := fmt.Sprintf(kubeadmConfig, documentationAddress, apiPort, cp.NodeName, Version,
		cp.PKIDir, filepath.Join(cp.Dir, "etcd"))
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "phase", "certs", "all", "--config", cfg},
		{"init", "phase", "kubeconfig", "all", "--config", cfg, "--kubeconfig-dir", cp.KubeconfigDir},
	} {
		cmd := exec.CommandContext(ctx, cp.Binaries.Kubeadm, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("kubeadm %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	from := []byte("https://" + documentationAddress + ":" + strconv.Itoa(apiPort))
	confs, err := filepath.Glob(filepath.Join(cp.KubeconfigDir, "*.conf"))
	if err != nil {
		return err
	}
	for _, conf := range confs {
		data, err := os.ReadFile(conf)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, from) {
			return fmt.Errorf("%s does not name %s", conf, from)
		}
		if err := os.WriteFile(conf, bytes.ReplaceAll(data, from, []byte(cp.Server)), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// run starts one program with its output in <Dir>/<name>.log. It dies
// with the test process (Pdeathsig) should the test never call Stop.
func (cp *ControlPlane) run(name, bin string, args ...string) error {
	logPath := filepath.Join(cp.Dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644) // a restart appends
	if err != nil {
		return err
	}
	defer f.Close() // the child holds its own copy
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = cp.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	cp.mu.Lock()
	cp.procs = append(cp.procs, p)
	cp.mu.Unlock()
	return nil
}

// waitReady polls /readyz (anonymous, as kubeadm's probe does) until it
// answers 200, a program exits (but one named in tolerate), or
// ReadyTimeout passes.
func (cp *ControlPlane) waitReady(ctx context.Context, tolerate ...string) error {
	client, err := cp.httpClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		for _, p := range cp.running() {
			if slices.Contains(tolerate, p.name) {
				continue
			}
			select {
			case <-p.done:
				return fmt.Errorf("%s exited before the apiserver was ready (%v); %s ends:\n%s", p.name, p.err, p.log, tail(p.log, 30))
			default:
			}
		}
		body, code, err := get(ctx, client, cp.Server+"/readyz?verbose")
		switch {
		case err == nil && code == http.StatusOK:
			return nil
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("%d: %s", code, failedChecks(body))
		}
		select {
		case <-ctx.Done():
			apiserver := cp.proc("kube-apiserver")
			return fmt.Errorf("apiserver not ready after %v (last /readyz: %s); %s ends:\n%s", ReadyTimeout, last, apiserver.log, tail(apiserver.log, 30))
		case <-tick.C:
		}
	}
}

// httpClient trusts the cluster CA and nothing else.
func (cp *ControlPlane) httpClient() (*http.Client, error) {
	return CAClient(filepath.Join(cp.PKIDir, "ca.crt"), 5*time.Second)
}

// CAClient is an anonymous HTTPS client that trusts the CA in caFile
// alone, each request bounded by timeout, as kubeadm's /readyz checks ask.
func CAClient(caFile string, timeout time.Duration) (*http.Client, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}, nil
}

// Get fetches url with c: the body and the HTTP status.
func Get(ctx context.Context, c *http.Client, url string) ([]byte, int, error) {
	return get(ctx, c, url)
}

func get(ctx context.Context, c *http.Client, url string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode, err
}

// failedChecks keeps the "[-]" lines of a verbose /readyz answer.
func failedChecks(body []byte) string {
	var failed []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, line)
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(string(body))
	}
	return strings.Join(failed, "; ")
}

// Stop ends every program it runs, the last started first (etcd last):
// SIGTERM, then SIGKILL after stopTimeout; it returns once all have been
// reaped. It is safe to call
// more than once (Start also calls it from t.Cleanup).
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		var errs []error
		procs := cp.running()
		for i := len(procs) - 1; i >= 0; i-- {
			if err := procs[i].stop(); err != nil {
				errs = append(errs, err)
			}
		}
		cp.stopErr = errors.Join(errs...)
	})
	return cp.stopErr
}

func (p *process) stop() error {
	if p.stopWithin(stopTimeout) {
		return fmt.Errorf("%s ignored SIGTERM for %v and was killed", p.name, stopTimeout)
	}
	return nil
}

// stopWithin sends SIGTERM, then SIGKILL after grace; killed: it took
// SIGKILL.
func (p *process) stopWithin(grace time.Duration) (killed bool) {
	select {
	case <-p.done:
		return false // exited already; waitReady reported it
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return true
}

// Pids are the process IDs of the programs running: etcd and
// kube-apiserver, and kube-controller-manager once started.
func (cp *ControlPlane) Pids() []int {
	var pids []int
	for _, p := range cp.running() {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// Kubectl runs the built kubectl with admin.conf and returns its standard
// output; it fails t when kubectl fails.
func (cp *ControlPlane) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := cp.RunKubectl(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RunKubectl runs the built kubectl with admin.conf and returns its
// standard output, and an error holding its standard error when it fails
// (as `kubectl auth can-i` does when the answer is no).
func (cp *ControlPlane) RunKubectl(ctx context.Context, args ...string) (string, error) {
	return cp.kubectl(ctx, cp.AdminKubeconfig, args...)
}

func (cp *ControlPlane) kubectl(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	full := append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(cp.Dir, "kubectl-cache")}, args...)
	cmd := exec.CommandContext(ctx, cp.Binaries.Kubectl, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// freePorts finds n distinct free TCP ports on 127.0.0.1. They are free
// when it returns; a program that binds one later could in principle lose
// it to another process in between.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
