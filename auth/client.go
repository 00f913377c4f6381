package auth

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/podvisor/podvisor/internal/kube"
	"github.com/podvisor/podvisor/internal/trust"
)

// maxKubeconfig bounds the kubeconfig read.
const maxKubeconfig = 4 << 20

// KubeconfigClient returns a ClientFunc that builds its clientset from the
// kubeconfig file at path with restConfig (the mirror's settings), when
// first asked and again whenever the file changed: the kubeconfig need not
// exist when podvisor starts (a request before it does is an error, so
// denied). A kubeconfig that a user other than root (or podvisor's own
// user) could change is refused each time it is read, so denied: its
// writer would choose the apiserver that answers the reviews.
func KubeconfigClient(path string, restConfig func(path string) (*rest.Config, error)) ClientFunc {
	var (
		mu  sync.Mutex
		sum []byte
		cs  kube.Interface
	)
	return func() (kube.Interface, error) {
		b, err := trust.ReadTrusted(path, os.Geteuid(), maxKubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		s := sha256.Sum256(b)
		mu.Lock()
		defer mu.Unlock()
		if cs != nil && bytes.Equal(sum, s[:]) {
			return cs, nil
		}
		cfg, err := restConfig(path)
		if err != nil {
			return nil, err
		}
		c, err := kube.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		cs, sum = c, s[:]
		return cs, nil
	}
}
