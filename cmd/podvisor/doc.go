// Command podvisor is a standalone static-pod supervisor: it keeps the pods
// described by the manifests in a directory running on containerd, with no
// control plane. See README.md.
//
// Contract:
//   - main builds nothing itself: it runs package cli's command line with
//     a context that SIGINT and SIGTERM end, and exits with its code; the
//     daemon is package daemon.
//   - `podvisor log-driver ARG`, as the containerd shim runs it with no
//     environment, takes a fast path before any CLI machinery, and so does
//     `podvisor pod-init`, a pod's init when podvisor-log-driver is not
//     beside podvisor.
package main
