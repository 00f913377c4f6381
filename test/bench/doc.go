// Command bench measures how fast podvisor starts and restarts pods against
// a baseline that does the same work straight through containerd and the
// floor (a new container alone), podvisor's footprint with pods running
// and at rest, the probes' cost, and how fast pods show in an apiserver, a
// kubeadm control plane's from cold, and what podvisor writes to disk and
// asks of the apiserver at rest (`make bench`).
//
//	go run ./test/bench [-podvisor bin/podvisor] [-runs 5] [-sizes 1,30] [-restarts 5] [-probes 30s] [-mirror] [-flash 3m] [-requests 3m] [-json out.json]
//
// Other flags: -idle (the footprint's CPU window, 0 skips it), -log-level
// and -podvisor-log (podvisor's log, kept in that file), and
// -baseline-log-driver (the baseline's tasks log through podvisor's log
// driver, as podvisor's do, instead of having no IO: it isolates the cost
// of the log driver), -ctr (also the ctr and ctr-floor cases, below).
//
// Everything runs against a private containerd (test/testenv) with its
// CNI network (bridge + host-local, no masquerade). Start latency is the
// time from t0 to the mtime of a file the container's first instruction
// writes into a hostPath volume (`touch /out/started`; the kernel stamps
// mtimes with its coarse clock, a few ms at worst):
//
//   - podvisor: N manifests are written into a staging dir, t0 is taken,
//     and they are renamed into podvisor's manifests dir back to back.
//
//   - baseline: t0 is taken just before N goroutines each create a network
//     namespace, run CNI ADD (cni.Manager, same conflist), create a
//     container with the same image, command and bind mount joined to that
//     namespace, and start its task with no IO.
//
//   - floor (N=1 only): the baseline without the network: each pod's
//     network namespace is made before t0 and gets no CNI ADD, so a start
//     is a container and its task alone, what a restart in an existing
//     pod's namespace has to do. The baseline times each pod's netns + CNI
//     ADD; 1 pod is held to the floor + that (issue 19).
//
//   - ctr and ctr-floor (-ctr PATH, a ctr binary): the baseline and the
//     floor with the container and its task made by a `ctr run -d`
//     process per pod (same image, command, bind mount, network namespace
//     and IO) instead of the Go client in this process. Issue 19's own
//     table measured its floor that way; the goals are held to both.
//
// Cases alternate run by run, each with a warm-up pod first (image import,
// page cache) that is not measured, and everything is removed between runs.
// containerd's own events (snapshot prepared, container created, task
// created, task started) break each start down into phases, and /proc,
// read at t0 and at the last first instruction, its CPU into the manager
// (podvisor, or the benchmark for the baseline and the floor), the
// processes the manager reaped (the CNI plugins), containerd, the case's
// shims with their runc, and the containers' own processes (each task's
// cgroup usage: runc's init, which mounts the container's filesystems,
// until it execs the command). Then
// -restarts times (5), a fresh podvisor pod running and ready has its
// container's process killed with SIGKILL: kill → the new container's
// first instruction (the file removed before the kill, written again),
// against the floor's start.
//
// With the largest N running under podvisor, the footprint is taken (5 s
// after they are all ready): podvisor's VmRSS and its CPU over an idle
// window, and separately its log drivers, the shims of its namespace and
// containerd.
//
// At rest, podvisor's own figures come from /proc: RSS split into
// anonymous and file pages (smaps_rollup), CPU from its threads' schedstat
// run time (ns; utime+stime in 10 ms ticks beside it), wake-ups as the
// timeslices its threads ran (schedstat) and the voluntary context
// switches (status). They are taken over the footprint's window, the flash
// phase's (no apiserver) and the requests phase's (--kubeconfig, a live
// apiserver, lease renewals included), and printed in one table against
// issue 19's goals.
//
// -probes 30s adds the probe-cost phase (-start=false runs it alone): with
// -probe-pods pods (30) whose container is probetarget answering HTTP on
// its pod IP, once all are running and ready, podvisor's CPU time
// (utime+stime) and RSS over the window, for the pods without probes, with
// an httpGet readiness and liveness probe each, and with an exec liveness
// probe (`true`) each, every probe at periodSeconds 1. Probe runs are
// counted from the target's request log and containerd's exec-started
// events; CPU per run is what a configuration adds over the one without
// probes. containerd's and the shims' CPU (with the runc processes and
// probe commands the shims reap) and podvisor's goroutines and open fds
// (with the pods, and after they are removed) are reported beside it.
//
// -mirror adds the mirror phase (-start=false runs it alone), against the
// control plane `make controlplane` builds (test/controlplane,
// $PODVISOR_TEST_CONTROLPLANE), everything on 127.0.0.1:
//
//   - with etcd and kube-apiserver ready and podvisor (--kubeconfig
//     kubelet.conf) registered as node bench, -mirror-runs times (5): a
//     busybox manifest renamed into the manifests dir → the mirror pod
//     first seen, and first seen Ready, by a watch on the apiserver (and
//     the container's first instruction, locally);
//   - -kubeadm-runs times (3), the kubeadm control plane from cold:
//     `kubeadm --rootfs` writes the PKI, kubeconfigs and four manifests
//     into a fresh root (controlplane.KubeadmRoot, not measured), the
//     images of podvisor's containerd namespace are deleted, and podvisor
//     starts with a fresh state dir, an images dir holding the four
//     control-plane archives and kubelet.conf; from its start: each
//     archive imported (podvisor's log), each task started (containerd's
//     events), the apiserver's /readyz ok (polled every 20 ms, kubeadm's
//     ports), each pod Ready in podvisor's API (polled every 20 ms), each
//     mirror pod seen and seen Running 1/1 (a watch from the apiserver's
//     first answer); and, from podvisor's log, the node's registration and
//     the mirror creations the apiserver refused. The runs need kubeadm's
//     ports (6443, 2379-2381, 10257, 10259) free. -mirror-log-dir keeps
//     the phase's podvisor logs.
//
// -flash 3m adds the flash phase (-start=false runs it alone): a podvisor
// whose --state-dir is a loop-mounted ext4 (so that write_bytes counts
// what reaches a disk; a tmpfs or overlay counts nothing) runs -flash-pods
// pods (30) with its default periods; a minute after they are all Ready,
// podvisor's /proc/<pid>/io write_bytes (and wchar, syscw, which count
// sockets and pipes too) are compared over the window and extrapolated to
// an hour, and what changed under --state-dir is listed. Only podvisor's
// process is measured: its log goes to a pipe the benchmark drains (as
// journald reads its stderr), and container output is written by the log
// drivers the shims start. It needs mkfs.ext4 and loop devices.
//
// -requests 3m adds the requests phase (-start=false runs it alone):
// against the control plane `make controlplane` builds, its apiserver
// started with an audit log (Metadata level, the node's user only,
// controlplane.Options.APIServerArgs), podvisor runs as node bench with
// -request-pods busybox pods (10); a minute after they and their mirrors
// are Ready, every request of system:node:bench the apiserver received
// over the window is counted from the audit log, by verb and resource
// (watches when they start), with the watches still open at its end.
// Beside it, kubelet's rate computed from its defaults (lease renewal,
// node status report frequency, its informers' watches), not measured.
//
// It needs root, containerd, runc, the CNI plugins and /bin/busybox, like
// the tests that use test/testenv.
package main
