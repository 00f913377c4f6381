// Package testenv runs a private containerd for end-to-end tests.
//
// Start creates a directory that holds everything the environment owns: the
// daemon's config, root, state, socket and log, a CNI conflist for a bridge
// network of its own (unique bridge name, network name and /24 from
// 10.222.0.0/16, no masquerade, no default route), the CNI IPAM data and a
// busybox OCI image archive built by test/testimage, with probetarget
// (test/probetarget) at /bin/probetarget: built by Start with the go
// command, unless $PODVISOR_TEST_PROBETARGET names a binary. Stop removes
// all of it: containers, shims and their processes, mounts, the bridge and
// the directory. Restart bounces only the daemon, so tests can check that
// running tasks survive a containerd restart.
//
// Each Env has its own containerd namespace (Env.Namespace): runc's state
// directory and the default cgroup path are keyed by namespace host-wide,
// so environments of parallel test packages must not share one.
//
// Tests usually call Start once from TestMain (checking Missing first, and
// handing its list to prereq.Exit) and RequireRoot at the top of every test
// that needs the environment: a plain go test skips where something is
// missing (root, containerd, runc, a CNI plugin, busybox), one run with
// $PODVISOR_E2E_REQUIRED set (make test) fails naming it (test/prereq).
//
// containerd comes from $PODVISOR_TEST_CONTAINERD (a binary, or a build
// directory holding bin/containerd) or from PATH; 1.6 and 2.x both work.
package testenv
