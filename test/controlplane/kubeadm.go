package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// KubeadmAdvertise is the advertise address KubeadmRoot's files are
// generated with: kubeadm refuses a loopback one, so a documentation
// address stands in, and 127.0.0.1 is put in its place wherever something
// would be reached there.
const KubeadmAdvertise = documentationAddress

// KubeadmPorts are the host ports kubeadm's manifests use (apiserver, etcd
// client, peer and metrics, controller-manager, scheduler). They are
// outside the ephemeral range the tests draw from.
var KubeadmPorts = []int{6443, 2379, 2380, 2381, 10257, 10259}

// CheckKubeadmPorts fails when one of KubeadmPorts is taken (another
// control plane on this host).
func CheckKubeadmPorts() error {
	for _, p := range KubeadmPorts {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			return fmt.Errorf("kubeadm's port %d is taken (another control plane on this host?): %w", p, err)
		}
		l.Close()
	}
	return nil
}

// kubeadmInitConfig is the configuration every kubeadm run of
// KubeadmRoot reads; the KubeletConfiguration only says where kubeadm's
// kubelet check looks.
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

// KubeadmRoot runs kubeadm chrooted into Root (--rootfs): kubeadm writes
// only to /etc/kubernetes (manifests have no directory flag), so with
// --rootfs it writes its default layout below Root
// (etc/kubernetes/{pki,*.conf,manifests}, var/lib/etcd) and the host's
// /etc/kubernetes is never touched.
type KubeadmRoot struct {
	Kubeadm string // the kubeadm binary
	Root    string // kubeadm's /
	// Logf, when set, hears each run's arguments, duration and output.
	Logf func(format string, args ...any)
}

// Config is the path of the kubeadm configuration inside Root, as
// kubeadm's --config takes it.
const Config = "/kubeadm.yaml"

// Run runs kubeadm with args (paths inside Root) and returns its output.
func (k *KubeadmRoot) Run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	full := append([]string{"--rootfs", k.Root}, args...)
	began := time.Now()
	out, err := exec.CommandContext(ctx, k.Kubeadm, full...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubeadm %s: %w\n%s", strings.Join(full, " "), err, out)
	}
	if k.Logf != nil {
		k.Logf("kubeadm %s (%v):\n%s", strings.Join(args, " "), time.Since(began).Round(time.Millisecond), out)
	}
	return string(out), nil
}

// WriteControlPlane writes Config for node (kubeadm's kubelet check on
// 127.0.0.1:healthzPort) and runs `kubeadm init phase` certs all,
// kubeconfig all, etcd local and control-plane all: the PKI, the
// kubeconfigs and the four static-pod manifests in
// Root/etc/kubernetes/manifests. Then it makes them run on this host with
// nothing sent to the advertise address (see loopback).
func (k *KubeadmRoot) WriteControlPlane(ctx context.Context, node string, healthzPort int) error {
	if err := os.MkdirAll(k.Root, 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf(kubeadmInitConfig, KubeadmAdvertise, node, Version, healthzPort)
	if err := os.WriteFile(filepath.Join(k.Root, Config), []byte(cfg), 0o600); err != nil {
		return err
	}
	for _, phase := range [][]string{{"certs", "all"}, {"kubeconfig", "all"}, {"etcd", "local"}, {"control-plane", "all"}} {
		args := append(append([]string{"init", "phase"}, phase...), "--config", Config)
		if _, err := k.Run(ctx, args...); err != nil {
			return err
		}
	}
	return k.loopback()
}

// loopback edits kubeadm's files, written under Root, so that they run on
// this host with nothing sent to the advertise address. containerd
// resolves hostPath volumes on the host, so the manifests' hostPaths below
// /etc/kubernetes and /var/lib/etcd get Root as a prefix; kubeconfigs,
// etcd's URLs and the apiserver's probes get 127.0.0.1 for the advertise
// address. Nothing else is changed (with --rootfs kubeadm leaves out the
// CA directories its chroot lacks; the control plane needs none). Each
// edit must apply exactly as often as kubeadm v1.37.2 gives it cause, so
// a kubeadm that writes something else fails here rather than later.
func (k *KubeadmRoot) loopback() error {
	root := k.Root
	k8s := filepath.Join(root, "etc", "kubernetes")
	from, to := "https://"+KubeadmAdvertise+":6443", "https://127.0.0.1:6443"
	for _, conf := range []string{"admin.conf", "super-admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"} {
		if err := editFile(filepath.Join(k8s, conf), edit{"server: " + from, "server: " + to, 1}); err != nil {
			return err
		}
	}
	// hostPaths are resolved by containerd on the host, where kubeadm's /
	// is root.
	hostPath := func(p string, n int) edit {
		return edit{"\n      path: " + p, "\n      path: " + filepath.Join(root, p), n}
	}
	m := filepath.Join(k8s, "manifests")
	edits := map[string][]edit{
		"etcd.yaml": {
			// Nothing listens on the documentation address (a host need
			// not have it), and a second 127.0.0.1:2379 listener would
			// collide with the first.
			{"--listen-client-urls=https://127.0.0.1:2379,https://" + KubeadmAdvertise + ":2379", "--listen-client-urls=https://127.0.0.1:2379", 1},
			// Peer listener, advertised peer and client URLs (flags and
			// kubeadm's annotation).
			{KubeadmAdvertise, "127.0.0.1", 5},
			hostPath("/etc/kubernetes/pki/etcd", 1), hostPath("/var/lib/etcd", 1),
		},
		"kube-apiserver.yaml": {
			// Startup, readiness and liveness probes. --advertise-address
			// stays: kube-apiserver refuses a loopback one, and only
			// writes it into the kubernetes Service's endpoints.
			{"host: " + KubeadmAdvertise, "host: 127.0.0.1", 3},
			hostPath("/etc/kubernetes/pki", 1),
		},
		"kube-controller-manager.yaml": {
			hostPath("/etc/kubernetes/pki", 1), hostPath("/etc/kubernetes/controller-manager.conf", 1),
		},
		"kube-scheduler.yaml": {
			hostPath("/etc/kubernetes/scheduler.conf", 1),
		},
	}
	for name, e := range edits {
		if err := editFile(filepath.Join(m, name), e...); err != nil {
			return err
		}
	}
	return nil
}

// edit replaces old by new, which must occur exactly n times.
type edit struct {
	old, new string
	n        int
}

func editFile(path string, edits ...edit) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, e := range edits {
		if got := bytes.Count(data, []byte(e.old)); got != e.n {
			return fmt.Errorf("%s: %q occurs %d times, want %d:\n%s", path, e.old, got, e.n, data)
		}
		data = bytes.ReplaceAll(data, []byte(e.old), []byte(e.new))
	}
	return os.WriteFile(path, data, 0o600)
}
