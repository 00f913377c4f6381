// Package controlplane runs a real Kubernetes control plane for tests: etcd
// and kube-apiserver v1.37.2 as plain processes on 127.0.0.1, with the PKI
// and kubeconfigs kubeadm makes. It is test tooling, never imported by the
// product.
//
// The binaries come from the test-only module test/controlplane (`make
// controlplane` builds them, static, into .cache/controlplane-v1.37.2, with
// the control-plane images kubeadm's manifests name in its images/
// directory); $PODVISOR_TEST_CONTROLPLANE names another directory.
//
// Contract:
//   - Binaries skips the test when the binaries were never built and the
//     variable is unset, and fails it when the variable names a directory
//     without them (`make test` sets it, so there a missing binary is a
//     failure, not a skip).
//   - Start writes everything under one directory (a t.TempDir by default):
//     `kubeadm init phase certs all` and `kubeadm init phase kubeconfig all`
//     from a config with the documentation advertise address 192.0.2.2,
//     then 127.0.0.1 put in its place in the kubeconfigs (kubeadm refuses a
//     loopback address; the apiserver's certificate carries 127.0.0.1 as a
//     SAN). etcd and kube-apiserver listen only on 127.0.0.1, on free
//     ports, with the flags of kubeadm's manifests, except that the
//     apiserver still advertises 192.0.2.2: it refuses a loopback
//     --advertise-address, and nothing sends traffic there. Start returns once
//     /readyz answers ok, and makes admin.conf usable as kubeadm init does
//     (the kubeadm:cluster-admins ClusterRoleBinding, created with
//     super-admin.conf).
//   - Options.APIServerArgs are added after kubeadm's flags (an audit log
//     for a benchmark, say).
//   - kubelet.conf is kubeadm's own: an embedded client certificate for
//     system:node:<node> in group system:nodes, no bootstrap token.
//   - Prepare writes the PKI and kubeconfigs without starting anything (a
//     node agent can then start before any apiserver answers, as under
//     kubeadm); Launch starts etcd and kube-apiserver. Start is both.
//   - StopAPIServer and StartAPIServer stop (SIGTERM, SIGKILL after
//     APIServerGrace) and start kube-apiserver alone, on the same port and
//     etcd data.
//   - StartControllerManager adds kube-controller-manager with kubeadm's
//     flags and controller-manager.conf, without leader election (it would
//     exit while the apiserver is stopped), plus the caller's flags;
//     RestartControllerManager starts it again, as kubelet does under
//     kubeadm when it exits.
//   - Stop (also a t.Cleanup) ends every process and waits for them; no
//     process of the control plane outlives it.
package controlplane
