// Package prereq decides what a test does when something it needs is
// missing from the machine: root, containerd, runc, a CNI plugin, busybox,
// make, the built control plane.
//
// Contract:
//   - Missing is the one place a test gives up for a missing prerequisite.
//     A developer's plain `go test` skips with the reason; when
//     $PODVISOR_E2E_REQUIRED is set (make test, test-e2e, test-containerd2
//     and faults set it) the test fails instead, naming what is missing, so
//     those targets cannot pass with their end-to-end tests skipped.
//   - Exit is its counterpart for a TestMain that checks the environment
//     once: with the variable set it prints the whole list and ends the
//     test binary with status 1; without it, it returns and the tests skip.
//   - Root and CNIPlugins name the commonest prerequisites.
//   - It imports nothing of podvisor, so the tests of every package,
//     leaves included, can use it without an import cycle.
package prereq
