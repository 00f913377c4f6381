package daemon

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cni"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	v1 "k8s.io/api/core/v1"
)

// podDialer serves kubelet's port-forward: it connects to localhost in
// the pod's network namespace, found through a running container's
// process (/proc/<pid>/ns/net), as containerd's CRI does; a hostNetwork
// pod's localhost is the host's.
type podDialer struct{ rt *ctrd.Runtime }

var _ api.PodDialer = podDialer{}

func (d podDialer) DialPod(ctx context.Context, pod *v1.Pod, port int32) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	if pod.Spec.HostNetwork {
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", addr)
	}
	for _, cs := range append(pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses...) {
		id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
		if cs.State.Running == nil || !ok {
			continue
		}
		st, err := d.rt.State(ctx, id)
		if err != nil || !st.Running || st.Pid == 0 {
			continue
		}
		return cni.DialInNetNS(ctx, fmt.Sprintf("/proc/%d/ns/net", st.Pid), addr)
	}
	return nil, fmt.Errorf("pod %s has no running container to find its network namespace by", pod.Name)
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
