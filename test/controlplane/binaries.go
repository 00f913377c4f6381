package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
)

// EnvDir names the directory holding the built control plane; unset, it is
// .cache/controlplane-<Version> at the top of the podvisor repository.
const EnvDir = "PODVISOR_TEST_CONTROLPLANE"

// Version is the Kubernetes release test/controlplane builds.
const Version = "v1.37.2"

// Image references of the archives in Artifacts.ImagesDir, as kubeadm
// v1.37.2's manifests name them.
const (
	ImageAPIServer         = "registry.k8s.io/kube-apiserver:" + Version
	ImageControllerManager = "registry.k8s.io/kube-controller-manager:" + Version
	ImageScheduler         = "registry.k8s.io/kube-scheduler:" + Version
	ImageEtcd              = "registry.k8s.io/etcd:3.7.0-0"
)

// Artifacts are the paths of the built control-plane programs and images.
type Artifacts struct {
	Dir                   string
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kubeadm               string
	Kubectl               string
	// ImagesDir holds one OCI archive per control-plane image
	// (kube-apiserver.tar, kube-controller-manager.tar, kube-scheduler.tar,
	// etcd.tar), ready for podvisor's --images-dir.
	ImagesDir string
}

// imageFiles are the archives `make controlplane` writes to ImagesDir.
var imageFiles = []string{"kube-apiserver.tar", "kube-controller-manager.tar", "kube-scheduler.tar", "etcd.tar"}

// Binaries locates the built control plane. It skips t when nothing was
// built and $PODVISOR_TEST_CONTROLPLANE is unset, and fails t when the
// variable is set and something is missing.
func Binaries(t testing.TB) *Artifacts {
	t.Helper()
	b, err := findBinaries()
	if err == nil {
		return b
	}
	if os.Getenv(EnvDir) != "" {
		t.Fatalf("control plane: %v", err)
	}
	prereq.Missing(t, fmt.Sprintf("the built control plane (%v); `make controlplane` builds it", err))
	return nil
}

// Find locates the built control plane as Binaries does, for a program
// without a testing.T: an error says what is missing.
func Find() (*Artifacts, error) { return findBinaries() }

func findBinaries() (*Artifacts, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(root, ".cache", "controlplane-"+Version)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b := &Artifacts{
		Dir:                   dir,
		Etcd:                  filepath.Join(dir, "etcd"),
		KubeAPIServer:         filepath.Join(dir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(dir, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(dir, "kube-scheduler"),
		Kubeadm:               filepath.Join(dir, "kubeadm"),
		Kubectl:               filepath.Join(dir, "kubectl"),
		ImagesDir:             filepath.Join(dir, "images"),
	}
	want := []string{b.Etcd, b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler, b.Kubeadm, b.Kubectl}
	for _, f := range imageFiles {
		want = append(want, filepath.Join(b.ImagesDir, f))
	}
	var missing []string
	for _, p := range want {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, filepath.Base(p))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s lacks %v", dir, missing)
	}
	return b, nil
}

// repoRoot is the nearest directory above the working directory (a test's
// package directory) whose go.mod is podvisor's.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/podvisor/podvisor\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no podvisor go.mod above the working directory; set $%s", EnvDir)
		}
		dir = parent
	}
}
