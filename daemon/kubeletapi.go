package daemon

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cni"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	v1 "k8s.io/api/core/v1"
)

// podDialer serves kubelet's port-forward: it connects to localhost in
// the network namespace the pod's sandbox pinned (a bind mount under the
// run dir, named in its containers' specs), whichever of its containers
// run; a hostNetwork pod's localhost is the host's. Never a process's
// /proc/<pid>/ns/net: a process may be gone and its pid reused by another
// by the time it is opened, and a container's process may have entered
// a network namespace of its own.
type podDialer struct{ sandboxes podSandboxes }

// podSandboxes finds a pod's sandbox; *ctrd.Runtime is one.
type podSandboxes interface {
	PodSandbox(ctx context.Context, uid string) (ctrd.PodSandbox, error)
}

var (
	_ api.PodDialer = podDialer{}
	_ podSandboxes  = (*ctrd.Runtime)(nil)
)

func (d podDialer) DialPod(ctx context.Context, pod *v1.Pod, port int32) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	if pod.Spec.HostNetwork {
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", addr)
	}
	netns, err := d.netNS(ctx, pod)
	if err != nil {
		return nil, err
	}
	return cni.DialInNetNS(ctx, netns, addr)
}

// netNS is the network namespace file pod's sandbox pinned: the file
// "net" of the sandbox's own directory, as the sandbox named by its
// containers' label made it, still a namespace.
func (d podDialer) netNS(ctx context.Context, pod *v1.Pod) (string, error) {
	sb, err := d.sandboxes.PodSandbox(ctx, string(pod.UID))
	if err != nil {
		return "", fmt.Errorf("find the network namespace of pod %s: %w", pod.Name, err)
	}
	p := sb.NetNS
	if p == "" || !filepath.IsAbs(p) || filepath.Base(p) != "net" || filepath.Base(filepath.Dir(p)) != sb.ID {
		return "", fmt.Errorf("pod %s: its containers join network namespace %q, not one its sandbox %s pinned", pod.Name, p, sb.ID)
	}
	if !cni.IsNetNS(p) {
		return "", fmt.Errorf("pod %s: the network namespace of its sandbox (%s) is gone", pod.Name, p)
	}
	return p, nil
}

// kubeletPort is the port of --tls-bind-address, where podvisor serves
// kubelet's API, for the Node's daemonEndpoints; 0 when there is none or
// it is chosen at listen time.
func kubeletPort(address string) int32 {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0
	}
	return int32(n)
}
