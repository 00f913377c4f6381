package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/podvisor/podvisor/test/testcerts"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
)

// kubeletAPIPod is a pod of the kubeadm test's for kubectl exec, logs -f
// and port-forward through the apiserver (the control plane's images hold
// their binary only): a log line a second, and httpd on the pod's
// localhost only, which a port-forward reaches from inside the pod's
// network namespace (as kubelet's does), not at the pod's IP.
const kubeletAPIPod = `apiVersion: v1
kind: Pod
metadata:
  name: kubeletapi
  namespace: default
spec:
  containers:
  - name: shell
    image: busybox
    command: ["sh", "-c", "mkdir -p /www && echo podvisor-says-hi > /www/index.html && httpd -p 127.0.0.1:8080 -h /www && i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done"]
`

// kubeletAPISetup gives the kubeadm test's podvisor kubelet's API: the
// node's address is the test network bridge's gateway (a host address the
// test made, not loopback: the apiserver's node proxy refuses loopback),
// given as --node-ip and bound by --tls-bind-address on a free port. The
// cluster CA's clients (the apiserver's apiserver-kubelet-client
// certificate) are let in; the serving certificate is the test's own,
// which the apiserver does not verify under kubeadm's defaults. It also
// adds kubeletAPIPod to the manifests. It returns the port.
func kubeletAPISetup(t *testing.T, d *daemon, k8sDir string) int {
	t.Helper()
	ip, err := env.Gateway()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := filepath.Join(d.dir, "kubelet-serving")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := testcerts.NewCA(dir, "kubelet-serving")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server(dir, "kubelet", ip, net.ParseIP("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	d.extraArgs = append(d.extraArgs,
		"--node-ip", ip.String(),
		"--tls-bind-address", net.JoinHostPort(ip.String(), strconv.Itoa(port)),
		"--tls-cert-file", srv.CertFile, "--tls-private-key-file", srv.KeyFile,
		"--client-ca-file", filepath.Join(k8sDir, "pki", "ca.crt"))
	if err := os.WriteFile(filepath.Join(k8sDir, "manifests", "kubeletapi.yaml"), []byte(kubeletAPIPod), 0o600); err != nil {
		t.Fatal(err)
	}
	return port
}

// testKubeletAPI drives podvisor's kubelet API as users do, through the
// apiserver: kubectl logs (-f), attach, exec and port-forward; and
// /metrics/resource and /pods as metrics-server reads them.
func testKubeletAPI(t *testing.T, d *daemon, kc *kubectlRun, admin, k8sDir string, port int) {
	kc = &kubectlRun{t: t, bin: kc.bin, cache: kc.cache} // failing this subtest
	if out := kc.must(admin, "get", "node", node, "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}"); out != strconv.Itoa(port) {
		t.Errorf("node daemonEndpoints.kubeletEndpoint.Port = %q, want %d (--tls-bind-address)", out, port)
	}
	pod := "kubeletapi-" + node
	sub := *d // d's helpers, failing this subtest
	sub.t = t
	sub.poll("the mirror of "+pod+" Running", 2*time.Minute, func() (bool, string) {
		out, err := kc.run(admin, "get", "pod", "-n", "default", pod, "-o", "jsonpath={.status.phase}")
		return err == nil && out == "Running", fmt.Sprintf("%q %v", out, err)
	})

	// kubectl logs, of a control-plane pod.
	if out := kc.must(admin, "logs", "-n", "kube-system", "etcd-"+node, "--tail=3"); strings.Count(out, "\n") != 3 || !strings.Contains(out, `"level"`) {
		t.Errorf("kubectl logs etcd --tail=3 = %q, want 3 of etcd's JSON lines", out)
	}

	// kubectl logs -f: lines keep arriving.
	t.Run("logs -f", func(t *testing.T) {
		stop, stdout := kc.start(t, admin, "logs", "-f", "-n", "default", pod, "--tail=1")
		sc := bufio.NewScanner(stdout)
		var seen []int
		for len(seen) < 3 && sc.Scan() {
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "line %d", &n); err != nil {
				t.Fatalf("kubectl logs -f: line %q", sc.Text())
			}
			seen = append(seen, n)
		}
		if len(seen) < 3 || seen[1] != seen[0]+1 || seen[2] != seen[1]+1 {
			t.Errorf("kubectl logs -f gave %v (%v), want 3 consecutive lines", seen, sc.Err())
		}
		stop()
	})

	// kubectl attach: the main process's output as it comes.
	t.Run("attach", func(t *testing.T) {
		stop, stdout := kc.start(t, admin, "attach", "-n", "default", pod)
		defer stop()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "line %d", &n); err == nil {
				return
			}
		}
		t.Errorf("kubectl attach: no line of the container's output (%v)", sc.Err())
	})

	// kubectl exec: stdin in, stdout out, the exit code back.
	t.Run("exec", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kc.bin, "--kubeconfig", admin, "--cache-dir", kc.cache,
			"exec", "-i", "-n", "default", pod, "--", "sh", "-c", "cat; echo to-stderr >&2; exit 3")
		cmd.Stdin = strings.NewReader("from stdin\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("kubectl exec ... exit 3: %v, want exit code 3 (stderr %q)", err, stderr.String())
		}
		if stdout.String() != "from stdin\n" || !strings.Contains(stderr.String(), "to-stderr") {
			t.Errorf("kubectl exec: stdout %q, stderr %q", stdout.String(), stderr.String())
		}
	})

	// kubectl exec -it on a terminal: the command gets one, its exit code
	// comes back.
	t.Run("exec -it", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kc.bin, "--kubeconfig", admin, "--cache-dir", kc.cache,
			"exec", "-it", "-n", "default", pod, "--", "sh", "-c", "[ -t 0 ] && [ -t 1 ] && echo on-a-terminal; exit 3")
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out := &ptyReader{}
		go out.copyFrom(f)
		sub := *d
		sub.t = t
		sub.poll("kubectl exec -it's output", 30*time.Second, func() (bool, string) {
			return strings.Contains(out.String(), "on-a-terminal"), fmt.Sprintf("%q", out.String())
		})
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("kubectl exec -it ... exit 3: %v, want exit code 3 (output %q)", err, out.String())
		}
	})

	// kubectl port-forward to the pod's localhost-only httpd.
	t.Run("port-forward", func(t *testing.T) {
		stop, stdout := kc.start(t, admin, "port-forward", "-n", "default", "pod/"+pod, ":8080")
		defer stop()
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
		local := ""
		for local == "" && sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				local = m[1]
			}
		}
		if local == "" {
			t.Fatalf("kubectl port-forward printed no local port (%v)", sc.Err())
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }() // it prints a line per connection
		body, err := getBody("http://127.0.0.1:" + local + "/")
		if err != nil || body != "podvisor-says-hi\n" {
			t.Errorf("GET through kubectl port-forward = %q, %v; want the pod's page", body, err)
		}
	})

	// /metrics/resource two ways: through the apiserver's node proxy
	// (kubectl get --raw /api/v1/nodes/N/proxy/...: the apiserver dials the
	// Node's InternalIP and daemonEndpoints port with its kubelet client
	// certificate, and refuses a loopback address, hence the bridge's
	// address as the node IP), and as metrics-server reads it: straight
	// at that address and port with a client certificate of the cluster
	// CA, not verifying the serving certificate (--kubelet-insecure-tls).
	t.Run("metrics/resource", func(t *testing.T) {
		var n v1.Node
		if err := json.Unmarshal([]byte(kc.must(admin, "get", "node", node, "-o", "json")), &n); err != nil {
			t.Fatal(err)
		}
		var ip string
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				ip = a.Address
			}
		}
		if p := net.ParseIP(ip); p == nil || !p.IsGlobalUnicast() {
			t.Fatalf("node InternalIP %q: want the bridge's address (--node-ip), which the apiserver proxies to", ip)
		}
		proxy := "/api/v1/nodes/" + node + "/proxy"
		checkResourceMetrics(t, "kubectl get --raw "+proxy+"/metrics/resource", kc.must(admin, "get", "--raw", proxy+"/metrics/resource"))
		if out := kc.must(admin, "get", "--raw", proxy+"/pods"); !strings.Contains(out, `"kind":"PodList"`) || !strings.Contains(out, `"name":"etcd-`+node+`"`) {
			t.Errorf("kubectl get --raw %s/pods = %.300s, want a PodList with etcd", proxy, out)
		}

		base := "https://" + net.JoinHostPort(ip, strconv.Itoa(int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)))
		cert, err := tls.LoadX509KeyPair(filepath.Join(k8sDir, "pki", "apiserver-kubelet-client.crt"), filepath.Join(k8sDir, "pki", "apiserver-kubelet-client.key"))
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
		resp, err := c.Get(base + "/metrics/resource")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/metrics/resource = %s %v: %.300s", base, resp.Status, err, b)
		}
		checkResourceMetrics(t, "GET "+base+"/metrics/resource", string(b))
	})
}

// checkResourceMetrics parses out, what src returned, as metrics-server
// parses /metrics/resource, and wants the node's series and etcd's.
func checkResourceMetrics(t *testing.T, src, out string) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%s: parse: %v\n%s", src, err, out)
	}
	for _, name := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes"} {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 || f.Metric[0].GetTimestampMs() == 0 {
			t.Errorf("%s: %s: %v, want one sample with its time", src, name, f)
		}
	}
	for _, name := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_start_time_seconds", "pod_cpu_usage_seconds_total"} {
		found := false
		for _, m := range fams[name].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.Label {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["pod"] == "etcd-"+node && l["namespace"] == "kube-system" && (l["container"] == "etcd" || name == "pod_cpu_usage_seconds_total") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %s has no series of kube-system/etcd-%s:\n%s", src, name, node, out)
		}
	}
	if f := fams["scrape_error"]; f == nil || f.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("%s: scrape_error = %v, want 0", src, f)
	}
}

// start runs kubectl with a minute's bound and returns its stdout and
// what kills it; t's end kills it too.
func (k *kubectlRun) start(t *testing.T, kubeconfig string, args ...string) (stop func(), stdout io.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", k.cache}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("kubectl %s stderr: %s", strings.Join(args, " "), stderr.String())
		}
	})
	return cancel, stdout
}
