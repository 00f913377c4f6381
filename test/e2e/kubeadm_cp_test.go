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

	"github.com/podvisor/podvisor/test/controlplane"
	v1 "k8s.io/api/core/v1"
)

// TestKubeadmControlPlane is the kubeadm case: podvisor in kubelet's place
// for a control plane kubeadm v1.37.2 writes.
//
// kubeadm runs chrooted into a temp dir (--rootfs), and
// controlplane.KubeadmRoot.WriteControlPlane makes the files it writes run
// on this host: hostPaths get that root as a prefix; kubeconfigs, etcd's
// URLs and the apiserver's probes get 127.0.0.1 for the documentation
// advertise address; nothing else in kubeadm's files is changed. No
// traffic goes to the advertise address: kubeadm's apiserver calls use
// super-admin.conf, named explicitly; the phases that take no
// --kubeconfig (wait-control-plane, mark-control-plane) would use
// admin.conf pointed at the advertise address, so their checks and their
// node patch are made here directly.
func TestKubeadmControlPlane(t *testing.T) {
	requireEnv(t)
	bins := controlplane.Binaries(t)
	if err := controlplane.CheckKubeadmPorts(); err != nil {
		t.Fatal(err)
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
	ka := &kubeadmRun{t: t, k: &controlplane.KubeadmRoot{Kubeadm: bins.Kubeadm, Root: root, Logf: t.Logf}}
	if err := ka.k.WriteControlPlane(t.Context(), node, healthzPort); err != nil {
		t.Fatal(err)
	}

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

	kubeletPort := kubeletAPISetup(t, d, k8sDir)
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
	ka.run("init", "phase", "upload-config", "all", "--config", controlplane.Config, "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	ka.run("init", "phase", "bootstrap-token", "--config", controlplane.Config, "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	ka.run("init", "phase", "addon", "all", "--config", controlplane.Config, "--kubeconfig", "/etc/kubernetes/super-admin.conf")
	kc.must(admin, "get", "-n", "kube-system", "configmap/kubeadm-config", "configmap/kubelet-config", "deployment/coredns", "daemonset/kube-proxy")
	kc.must(admin, "get", "-n", "kube-public", "configmap/cluster-info")
	// The apiserver reaches the node's kubelet API as
	// kube-apiserver-kubelet-client, allowed nodes/proxy by the
	// kubeadm:apiserver-kubelet-client binding the phases above made:
	// podvisor asks the apiserver (Webhook, the default with --kubeconfig).
	kc.must(admin, "get", "clusterrolebinding", "kubeadm:apiserver-kubelet-client")
	t.Run("kubelet API", func(t *testing.T) { testKubeletAPI(t, d, kc, admin, k8sDir, kubeletPort) })

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
	testKubeadmUpgrade(t, d, ka, kc, admin)
}

// kubeadmRun runs kubeadm chrooted into its root and fails t when it
// fails.
type kubeadmRun struct {
	t *testing.T
	k *controlplane.KubeadmRoot
}

func (k *kubeadmRun) run(args ...string) string {
	k.t.Helper()
	out, err := k.k.Run(k.t.Context(), args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
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
