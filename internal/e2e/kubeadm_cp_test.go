package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
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
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/controlplane"
	v1 "k8s.io/api/core/v1"
)

// kubeadmAdvertise is the advertise address kubeadm writes: it refuses a
// loopback one, so a documentation address stands in, and the test puts
// 127.0.0.1 in its place wherever something would be reached there.
const kubeadmAdvertise = "192.0.2.2"

// kubeadmPorts are the host ports kubeadm's manifests use (apiserver,
// etcd client, peer and metrics, controller-manager, scheduler). They are
// outside the ephemeral range the other tests draw from.
var kubeadmPorts = []int{6443, 2379, 2380, 2381, 10257, 10259}

// kubeadmInitConfig is the configuration every kubeadm run reads; the
// KubeletConfiguration only says where kubeadm's kubelet check looks.
const kubeadmInitConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %[1]s
nodeRegistration:
  name: %[2]s
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %[3]s
apiServer:
  certSANs:
  - 127.0.0.1
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
`

// TestKubeadmControlPlane is the kubeadm case: podvisor in kubelet's place
// for a control plane kubeadm v1.37.2 writes.
//
// kubeadm writes only to /etc/kubernetes (manifests have no directory
// flag), so every kubeadm run has --rootfs: it chroots into a temp dir and
// writes its default layout there (etc/kubernetes/{pki,*.conf,manifests},
// var/lib/etcd), and the host's /etc/kubernetes is never touched.
// containerd resolves hostPath volumes on the host, so the manifests'
// hostPaths below /etc/kubernetes and /var/lib/etcd get that root as a
// prefix; kubeconfigs, etcd's URLs and the apiserver's probes get 127.0.0.1
// for 192.0.2.2. Nothing else in kubeadm's files is changed (with --rootfs
// kubeadm leaves out the CA directories its chroot lacks; the control
// plane needs none). No traffic goes to 192.0.2.2: kubeadm's apiserver
// calls use super-admin.conf, named explicitly; the phases that take no
// --kubeconfig (wait-control-plane, mark-control-plane) would use
// admin.conf pointed at the advertise address, so their checks and their
// node patch are made here directly.
func TestKubeadmControlPlane(t *testing.T) {
	requireEnv(t)
	bins := controlplane.Binaries(t)
	for _, p := range kubeadmPorts {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("kubeadm's port %d is taken (another control plane on this host?): %v", p, err)
		}
		l.Close()
	}
	healthzPort := 10248 // kubelet's, when it is free
	if l, err := net.Listen("tcp", "127.0.0.1:10248"); err == nil {
		l.Close()
	} else {
		healthzPort = freeLoopbackPort(t)
	}

	d := newDaemon(t)
	root := filepath.Join(d.dir, "root") // kubeadm's /
	k8sDir := filepath.Join(root, "etc", "kubernetes")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(kubeadmInitConfig, kubeadmAdvertise, node, controlplane.Version, healthzPort)
	if err := os.WriteFile(filepath.Join(root, "kubeadm.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ka := &kubeadmRun{t: t, bin: bins.Kubeadm, root: root}
	ka.run("init", "phase", "certs", "all", "--config", "/kubeadm.yaml")
	ka.run("init", "phase", "kubeconfig", "all", "--config", "/kubeadm.yaml")
	ka.run("init", "phase", "etcd", "local", "--config", "/kubeadm.yaml")
	ka.run("init", "phase", "control-plane", "all", "--config", "/kubeadm.yaml")
	loopbackKubeadmFiles(t, root)

	for _, f := range []string{"kube-apiserver.tar", "kube-controller-manager.tar", "kube-scheduler.tar", "etcd.tar"} {
		if err := os.Link(filepath.Join(bins.ImagesDir, f), filepath.Join(d.images, f)); err != nil {
			t.Fatal(err)
		}
	}
	// podvisor watches kubeadm's manifests directory itself, as kubelet's
	// staticPodPath would be /etc/kubernetes/manifests.
	d.manifests = filepath.Join(k8sDir, "manifests")
	healthz := "127.0.0.1:" + strconv.Itoa(healthzPort)
	d.extraArgs = append(d.extraArgs,
		"--kubeconfig", filepath.Join(k8sDir, "kubelet.conf"),
		"--healthz-bind-address", healthz)
	kc := &kubectlRun{t: t, bin: bins.Kubectl, cache: filepath.Join(d.dir, "kubectl-cache")}
	admin := filepath.Join(k8sDir, "admin.conf")
	superAdmin := filepath.Join(k8sDir, "super-admin.conf")

	began := time.Now()
	d.start()
	d.poll("the apiserver's /readyz", 3*time.Minute, func() (bool, string) {
		out, err := kc.run(admin, "get", "--raw", "/readyz")
		return err == nil && out == "ok", fmt.Sprintf("%q %v", out, err)
	})
	toReady := time.Since(began)
	// What kubeadm init does before it first uses admin.conf
	// (EnsureAdminClusterRoleBinding), here with super-admin.conf.
	if _, err := kc.run(superAdmin, "create", "clusterrolebinding", "kubeadm:cluster-admins",
		"--clusterrole=cluster-admin", "--group=kubeadm:cluster-admins"); err != nil {
		t.Fatal(err)
	}

	mirrors := []string{"etcd-" + node, "kube-apiserver-" + node, "kube-controller-manager-" + node, "kube-scheduler-" + node}
	d.poll("four mirror pods Running 1/1", 3*time.Minute, func() (bool, string) {
		out, err := kc.run(admin, "get", "pods", "-n", "kube-system", "-o", "json")
		if err != nil {
			return false, err.Error()
		}
		var l v1.PodList
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			return false, err.Error()
		}
		var ok, all []string
		for _, p := range l.Items {
			all = append(all, fmt.Sprintf("%s %s %s", p.Name, p.Status.Phase, readyCount(&p)))
			if p.Status.Phase == v1.PodRunning && readyCount(&p) == "1/1" && p.Annotations["kubernetes.io/config.mirror"] != "" {
				ok = append(ok, p.Name)
			}
		}
		for _, m := range mirrors {
			if !slices.Contains(ok, m) {
				return false, fmt.Sprint(all)
			}
		}
		return len(l.Items) == len(mirrors), fmt.Sprint(all)
	})
	toMirrors := time.Since(began)
	t.Logf("cold: podvisor start → apiserver /readyz %v, → four mirror pods Running 1/1 %v",
		toReady.Round(time.Millisecond), toMirrors.Round(time.Millisecond))
	t.Logf("kubectl get nodes,pods:\n%s%s", kc.must(admin, "get", "nodes", "-o", "wide"), kc.must(admin, "get", "pods", "-n", "kube-system"))
	if out := kc.must(admin, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"); out != "True" {
		t.Errorf("node %s Ready = %q, want True", node, out)
	}

	// kubeadm init's wait-control-plane phase, check by check as kubeadm
	// v1.37.2 makes them (util/apiclient/wait.go). The phase itself is not
	// run: it takes no --kubeconfig and, with the default admin.conf,
	// kubeadm calls the apiserver at the advertise address.
	if body, err := getBody("http://" + healthz + "/healthz"); err != nil || body != "ok" {
		t.Errorf("[kubelet-check] GET http://%s/healthz = %q, %v; want ok", healthz, body, err)
	}
	if out, err := kc.run(admin, "get", "--raw", "/livez"); err != nil || out != "ok" {
		t.Errorf("[control-plane-check] kube-apiserver /livez = %q, %v; want ok", out, err)
	}
	for _, url := range []string{"https://127.0.0.1:10257/healthz", "https://127.0.0.1:10259/livez"} {
		if body, err := getBody(url); err != nil || body != "ok" {
			t.Errorf("[control-plane-check] GET %s = %q, %v; want ok", url, body, err)
		}
	}

	// The phases after it that take --kubeconfig run as they are (named
	// explicitly, kubeadm uses the file as it is).
	began = time.Now()
	ka.run("init", "phase", "upload-config", "all", "--config", "/kubeadm.yaml", "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	ka.run("init", "phase", "bootstrap-token", "--config", "/kubeadm.yaml", "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	ka.run("init", "phase", "addon", "all", "--config", "/kubeadm.yaml", "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	kc.must(admin, "get", "-n", "kube-system", "configmap/kubeadm-config", "configmap/kubelet-config", "deployment/coredns", "daemonset/kube-proxy")
	kc.must(admin, "get", "-n", "kube-public", "configmap/cluster-info")

	// mark-control-plane has no --kubeconfig either: its node patch is made
	// here as kubeadm makes it. Then podvisor restarts, as kubelet may at
	// any time: it registers the node again, keeps kubeadm's label and
	// taint, and adopts the control plane without restarting a container.
	kc.must(admin, "label", "node", node, "node-role.kubernetes.io/control-plane=", "node.kubernetes.io/exclude-from-external-load-balancers=")
	kc.must(admin, "taint", "node", node, "node-role.kubernetes.io/control-plane:NoSchedule")
	ids := map[string]string{}
	for _, m := range mirrors {
		p, err := d.pod("kube-system/" + m)
		if err != nil {
			t.Fatal(err)
		}
		ids[m] = containerID(p, strings.TrimSuffix(m, "-"+node))
	}
	mirrorUIDs := kc.must(admin, "get", "pods", "-n", "kube-system", "-l", "tier=control-plane", "-o", "jsonpath={.items[*].metadata.uid}")
	d.stop(syscall.SIGTERM)
	restarted := time.Now()
	d.start()
	d.poll("the node lease renewed after the restart", time.Minute, func() (bool, string) {
		out, err := kc.run(admin, "get", "lease", "-n", "kube-node-lease", node, "-o", "jsonpath={.spec.renewTime}")
		if err != nil {
			return false, err.Error()
		}
		renewed, err := time.Parse(time.RFC3339Nano, out)
		return err == nil && renewed.After(restarted), fmt.Sprintf("renewTime %q %v", out, err)
	})
	var n v1.Node
	if err := json.Unmarshal([]byte(kc.must(admin, "get", "node", node, "-o", "json")), &n); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"node-role.kubernetes.io/control-plane", "node.kubernetes.io/exclude-from-external-load-balancers"} {
		if _, ok := n.Labels[l]; !ok {
			t.Errorf("after podvisor's restart, node labels %v lack %s", n.Labels, l)
		}
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(tn v1.Taint) bool {
		return tn.Key == "node-role.kubernetes.io/control-plane" && tn.Effect == v1.TaintEffectNoSchedule
	}) {
		t.Errorf("after podvisor's restart, node taints %v lack node-role.kubernetes.io/control-plane:NoSchedule", n.Spec.Taints)
	}
	for _, m := range mirrors {
		p := d.waitPod("kube-system/"+m, time.Minute, "running and ready again", func(p *v1.Pod) bool {
			return running(p) && readyCount(p) == "1/1"
		})
		if c := strings.TrimSuffix(m, "-"+node); containerID(p, c) != ids[m] || containerStatus(p, c).RestartCount != 0 {
			t.Errorf("%s: container %s (restarts %d) after podvisor's restart, want %s (0)", m, containerID(p, c), containerStatus(p, c).RestartCount, ids[m])
		}
	}
	if out := kc.must(admin, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"); out != "True" {
		t.Errorf("after podvisor's restart, node %s Ready = %q, want True", node, out)
	}
	// The mirrors are the same objects: adopted, not deleted and made again.
	if out := kc.must(admin, "get", "pods", "-n", "kube-system", "-l", "tier=control-plane", "-o", "jsonpath={.items[*].metadata.uid}"); out != mirrorUIDs {
		t.Errorf("after podvisor's restart, mirror UIDs %s, want %s (unchanged)", out, mirrorUIDs)
	}
}

// loopbackKubeadmFiles makes kubeadm's files, written under root, run on
// this host with nothing sent to the advertise address: each edit must
// apply exactly as often as kubeadm v1.37.2 gives it cause, so a kubeadm
// that writes something else fails here rather than later.
func loopbackKubeadmFiles(t *testing.T, root string) {
	t.Helper()
	k8s := filepath.Join(root, "etc", "kubernetes")
	from, to := "https://"+kubeadmAdvertise+":6443", "https://127.0.0.1:6443"
	for _, conf := range []string{"admin.conf", "super-admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"} {
		editFile(t, filepath.Join(k8s, conf), edit{"server: " + from, "server: " + to, 1})
	}
	// hostPaths are resolved by containerd on the host, where kubeadm's /
	// is root.
	hostPath := func(p string, n int) edit {
		return edit{"\n      path: " + p, "\n      path: " + filepath.Join(root, p), n}
	}
	m := filepath.Join(k8s, "manifests")
	editFile(t, filepath.Join(m, "etcd.yaml"),
		// Nothing listens on the documentation address (a host need not
		// have it), and a second 127.0.0.1:2379 listener would collide with
		// the first.
		edit{"--listen-client-urls=https://127.0.0.1:2379,https://" + kubeadmAdvertise + ":2379", "--listen-client-urls=https://127.0.0.1:2379", 1},
		// Peer listener, advertised peer and client URLs (flags and
		// kubeadm's annotation).
		edit{kubeadmAdvertise, "127.0.0.1", 5},
		hostPath("/etc/kubernetes/pki/etcd", 1), hostPath("/var/lib/etcd", 1))
	editFile(t, filepath.Join(m, "kube-apiserver.yaml"),
		// Startup, readiness and liveness probes. --advertise-address
		// stays: kube-apiserver refuses a loopback one, and only writes it
		// into the kubernetes Service's endpoints.
		edit{"host: " + kubeadmAdvertise, "host: 127.0.0.1", 3},
		hostPath("/etc/kubernetes/pki", 1))
	editFile(t, filepath.Join(m, "kube-controller-manager.yaml"),
		hostPath("/etc/kubernetes/pki", 1), hostPath("/etc/kubernetes/controller-manager.conf", 1))
	editFile(t, filepath.Join(m, "kube-scheduler.yaml"),
		hostPath("/etc/kubernetes/scheduler.conf", 1))
}

// edit replaces old by new, which must occur exactly n times.
type edit struct {
	old, new string
	n        int
}

func editFile(t *testing.T, path string, edits ...edit) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		if got := bytes.Count(data, []byte(e.old)); got != e.n {
			t.Fatalf("%s: %q occurs %d times, want %d:\n%s", path, e.old, got, e.n, data)
		}
		data = bytes.ReplaceAll(data, []byte(e.old), []byte(e.new))
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// kubeadmRun runs kubeadm chrooted into root.
type kubeadmRun struct {
	t    *testing.T
	bin  string
	root string
}

func (k *kubeadmRun) run(args ...string) string {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(k.t.Context(), 5*time.Minute)
	defer cancel()
	args = append([]string{"--rootfs", k.root}, args...)
	began := time.Now()
	out, err := exec.CommandContext(ctx, k.bin, args...).CombinedOutput()
	if err != nil {
		k.t.Fatalf("kubeadm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	k.t.Logf("kubeadm %s (%v):\n%s", strings.Join(args[2:], " "), time.Since(began).Round(time.Millisecond), out)
	return string(out)
}

// kubectlRun runs the built kubectl.
type kubectlRun struct {
	t     *testing.T
	bin   string
	cache string
}

func (k *kubectlRun) run(kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(k.t.Context(), time.Minute)
	defer cancel()
	full := append([]string{"--kubeconfig", kubeconfig, "--cache-dir", k.cache}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, k.bin, full...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (k *kubectlRun) must(kubeconfig string, args ...string) string {
	k.t.Helper()
	out, err := k.run(kubeconfig, args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

// readyCount is kubectl's READY column.
func readyCount(p *v1.Pod) string {
	ready := 0
	for _, c := range p.Status.ContainerStatuses {
		if c.Ready {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers))
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// getBody GETs url; like kubeadm's control-plane check it does not verify
// the components' self-signed serving certificates.
func getBody(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
