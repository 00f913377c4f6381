// Package supervise keeps the desired pods running. It is the only package
// that talks to containerd.
//
// A Supervisor receives full desired-set snapshots from manifest.Source and
// owns one pod worker per pod UID. Each worker runs in its own goroutine and
// drives its pod through these states:
//
//	          first sync
//	(new) ──────────────▶ sandbox ready ──▶ init containers ──▶ app containers
//	                         │  ▲                (in order)       (restart policy,
//	                         │  └── sandbox lost (reboot): kill      back-off)
//	                         │      containers, new sandbox             │
//	                         ▼                                          ▼
//	                   terminating ◀────────── manifest removed or replaced
//	                         │ stop signal, grace period, SIGKILL
//	                         ▼
//	                   cleaned up: tasks, containers, snapshots, CNI, netns,
//	                   IPC namespace, /dev/shm, cgroup, volumes, state
//
// A pod's network and IPC namespaces are files bind-mounted under the run
// dir (no pause process or image); its /dev/shm is a tmpfs beside them. All
// containers of a pod share one containerd shim (the runc shim's group
// annotation) and one parent cgroup. Container output goes to CRI-format
// files written by podvisor's own binary acting as the shim's log driver, so
// logs keep flowing while podvisor is down.
//
// Exits arrive from containerd's event stream and wake the owning worker at
// once; a periodic relist wakes every worker as a safety net. Stopping the
// Supervisor (its context ends) never stops a pod: a later Supervisor adopts
// the running tasks from containerd's labels and the per-pod records in the
// state dir.
package supervise
