package mirror

import "testing"

// TestDaemonEndpoints: the Node tells the apiserver the port of podvisor's
// kubelet API, where it dials for logs, exec and the node proxy; without
// one the port stays 0 (the apiserver then dials kubelet's 10250).
func TestDaemonEndpoints(t *testing.T) {
	for _, port := range []int32{10250, 41234, 0} {
		f := newFixture(t, func(o *Options) { o.KubeletPort = port })
		if err := f.session().syncNode(t.Context()); err != nil {
			t.Fatal(err)
		}
		n := f.node()
		if n == nil {
			t.Fatal("no Node created")
		}
		if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; got != port {
			t.Errorf("KubeletPort %d: daemonEndpoints.kubeletEndpoint.Port = %d", port, got)
		}
	}
}
