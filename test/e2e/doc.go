// Package e2e holds podvisor's end-to-end tests: the real binary against a
// private containerd, runc and the CNI reference plugins started by the
// tests (test/testenv). They need root and skip with the reason
// otherwise.
package e2e
