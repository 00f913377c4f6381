// Command podvisor-log-driver is the containerd "binary" log driver that
// podvisor's shims start once per container task: it writes the task's
// stdout and stderr to a CRI-format log file and keeps doing so while
// podvisor itself is stopped. It is a separate, small binary because a
// shim starts one per container: the full podvisor binary would do the
// same job, but each instance would initialise every package podvisor
// links (about ten times the memory and start-up time).
//
// It is run by the shim as `podvisor-log-driver log-driver ARG` with the
// task's stdout on fd 3, stderr on fd 4 and a readiness pipe on fd 5; podvisor
// falls back to `podvisor log-driver ARG` when this binary does not sit
// beside it.
//
// The same small binary is PID 1 of each pod that shares its process
// namespace (spec.shareProcessNamespace), run as `podvisor-log-driver
// pod-init` in place of kubelet's pause container (see package podinit);
// podvisor falls back to `podvisor pod-init` the same way.
//
// A container never blocks on its log: output the file cannot take (a full
// disk) is dropped and counted in "<log>.dropped", and writing resumes,
// after a gap record, when space returns (see package crilog).
package main
