// Package supervise keeps the desired pods running. It talks to the
// container runtime only through its Runtime interface (implemented on
// containerd by package supervise/containerd), to the network through
// Network, and reports through StatusSink.
//
// A Supervisor receives full desired-set snapshots from manifest.Source and
// owns one pod worker per pod UID. Each worker runs in its own goroutine: a
// loop that takes messages from a typed inbox (the desired spec, the
// ConfigMaps and Secrets, a stop request, a node's stop, OOM kills, probe
// results, restart requests, wake-ups), observes
// its containers, and then plans and executes until a plan has nothing to
// do:
//
//	          first step
//	(new) ──────────────▶ sandbox ready ──▶ init containers ──▶ app containers
//	                         │  ▲                (in order)       (restart policy,
//	                         │  └── sandbox lost (reboot): kill      back-off)
//	                         │      containers, new sandbox             │
//	                         ▼                                          ▼
//	                   terminating ◀────────── manifest removed or replaced
//	                         │ stop signal, grace period, SIGKILL
//	                         ▼
//	                   cleaned up: containers, CNI, namespaces, /dev/shm,
//	                   cgroup, volumes, logs, record
//
// Contract:
//
//   - planPod is pure: from the spec, the record, what the runtime reports,
//     the back-off clocks and the time, it returns actions. The executor is
//     the only part that does I/O; projectStatus is pure too.
//   - Gathering the planner's input writes nothing (planInput twice on the
//     same state gives the same plan and leaves the record as it was).
//     Probe results land in the record when they reach the inbox; observe
//     only reads the runtime. Every side effect is an action the planner
//     returns (kills, including a failed postStart hook's and a failed
//     probe's; probe starts of runs found running) or an executor step
//     (claiming the running containers' events, telling log drops).
//   - A worker uses only its workerDeps (the runtime, network, sandboxes,
//     prober, status sink, and the shared owner and probe maps behind their
//     own locks), never the Supervisor itself.
//   - Time is Options.Clock's (a k8s.io/utils/clock.WithTicker, the real
//     one when nil), tickers and timers included: the relist, the
//     heartbeat, back-offs, retries, a preStop hook's grace period, and the
//     default prober's schedule. Request timeouts of the runtime and the
//     network bound I/O on the wall clock.
//   - A container's ID is recorded before it is created, and its exit is on
//     disk before it is removed, so a podvisor killed at any point neither
//     leaks a container nor reports a run twice.
//   - A start the runtime refuses once the container exists is a run, as
//     with kubelet on containerd's CRI: it ends at once (StartError, exit
//     code 128, the runtime's error), is recorded and removed as any exit,
//     counts as a restart, and the restart policy and crash back-off
//     follow. A failure before the container exists (image, environment,
//     create) is no run: it is shown as waiting and retried.
//   - A runtime that cannot tell a container's state is no exit: no
//     decision is taken on it until it can.
//   - Stopping the Supervisor (its context ends) never stops a pod: a later
//     Supervisor adopts the running containers from their labels and the
//     per-pod records in the state dir.
//   - Exits arrive from the runtime's event stream and wake the owning
//     worker at once. A periodic relist is the safety net (relist.go) and
//     never creates a second container. With a runtime that is a
//     TaskLister (containerd's), it is one listing of the namespace's
//     tasks per RelistPeriod, and it wakes only the workers whose pods
//     changed: a worker whose last step left its pod at rest (every app
//     container running with a pid seen, nothing failed, nothing due, no
//     stop) publishes those containers' pids and its sandbox, and is woken
//     when the listing shows one of them missing, not running or under
//     another pid. The relist keeps one per-pod check of its own: it
//     stats each resting pod's sandbox (Sandboxes.Alive: namespace files,
//     /dev/shm, the boot) and wakes the worker of one that is gone, as
//     the step's planner would have found. A worker not at rest, every
//     worker when the listing fails, and every worker of a runtime
//     without the listing are woken, each asking State for its
//     containers. Everything else a step may need comes as a message
//     (specs, objects, probe results, OOM kills, drops, pressure, images,
//     readiness, containerd's return) or on the worker's own timer
//     (back-offs, retries, volume rewrites).
//   - With Options.LogLinks, a container has kubelet's
//     /var/log/containers link to its live log from its creation to its
//     removal; links into the log dir of containers the runtime no longer
//     has are pruned at start and after each pod's removal (never on a
//     timer), others are never touched.
//   - A container's environment is resolved when it starts, as kubelet's
//     makeEnvironmentVariables, from the pod, the node and the snapshot's
//     local ConfigMaps and Secrets (sent to every worker when they change,
//     as the planner's input). A container needing an object or key that
//     is missing (not optional) waits in CreateContainerConfigError with
//     kubelet's message, and starts with the snapshot that has it. Secret
//     values go only into the container's spec: never into a log line, an
//     event, a status or a metric.
//   - configMap, secret, downwardAPI and projected volumes are computed as
//     kubelet's volume plugins compute them (volumes.go) from the same
//     objects and written by the mounts package before the sandbox is
//     made. A volume needing an object or key that is missing holds the
//     pod before its sandbox (ContainerCreating, a FailedMount event) until
//     the snapshot that has it. Once set up, a change of objects rewrites
//     the volumes whose content changed (refreshVolumes), with a
//     VolumeUpdated event and no restart; a volume whose object went
//     missing keeps its files.
//   - Image volumes (imagevolume.go) are made ready before each start of a
//     container that mounts one, as kubelet does: the image ensured as its
//     pullPolicy says with the pod's pull secrets, then mounted read-only
//     by the runtime (an ImageVolumeMounter) under the pod's directory. A
//     failure holds only those containers (ErrImagePull, ImagePullBackOff,
//     ErrImageNeverPull, CreateContainerError for the mount or a subPath).
//     The mounts go with the pod's directory, then what holds them; those
//     of a pod no record names are collected at start.
//   - The node may stop a pod itself (StopPod: an eviction, the node's
//     shutdown; nodestop.go). The stop goes the termination path of a
//     removal (preStop hooks within NodeStop.Grace, sandbox and network
//     released) but the pod's record keeps it and why: the pod shows
//     kubelet's status (Failed, Evicted or Terminated, DisruptionTarget
//     TerminationByKubelet) until it starts again. An evicted pod starts
//     again as a new instance once SetPressure no longer lists its signal
//     and its eviction back-off is over (never before the first
//     SetPressure after a start); a pod stopped for a shutdown starts again
//     at the next Supervisor's start or on ResumeShutdownStops, its stop
//     counted as no restart.
//   - A pod asking for devices (extended resources, cdi.k8s.io/
//     annotations) is admitted at its first step, before anything is
//     made: it gets named CDI devices no other pod holds, recorded before
//     any container uses them, or it is rejected as kubelet rejects it
//     (Failed, OutOf<resource> or UnexpectedAdmissionError) and runs
//     nothing (devices.go). The pods' records are the devices held: read
//     at start before any admission, freed as a pod's worker ends.
//   - Before that, Options.Admit (the node's sysctls allowlist) is asked
//     once about a pod that never started; a refusal is final for the
//     worker (Failed, the reason, "Pod was rejected: ..."), a pod found
//     started is never asked (admit.go).
//   - A pod whose annotation podvisor.io/wait-for names other pods starts
//     nothing, not even its sandbox, until each is Ready (order.go); it
//     shows WaitingFor:NAMES and the condition podvisor.io/DependenciesReady
//     meanwhile, and every worker's publish that changes a pod's readiness
//     wakes the waiting ones. The order is start-only: once the sandbox
//     exists, no pod's readiness stops or holds anything.
//   - A stopping pod has a deletionTimestamp (Terminating) from the moment
//     its removal is asked for, even while a step hangs, and names the
//     step its stop waits on (status.StopStepAnnotation).
//   - Drops of a log driver (a full log filesystem) are noticed within
//     seconds, while they go on, and reported as one LogDropped event for
//     each episode. inotify reports the drivers' status file writes; the
//     files are read at a worker's first step and after such a write,
//     never at a relist (polled every 2 s only where inotify fails).
//   - At rest (pods running, nothing changing) the relist is the only
//     periodic work: one listing of the runtime's tasks per RelistPeriod
//     and a stat of each pod's sandbox, no worker woken, no State call
//     (one State per container per RelistPeriod without the listing); no
//     /proc walk (leftover shims are looked for after adoption and after
//     a pod's removal), no file read or written. LogLinks add nothing at
//     rest: their prune (a listing of the containers and a read of the
//     links' dir) runs at start and after each pod's removal.
//
// A pod's network and IPC namespaces are files bind-mounted under the run
// dir (no pause process or image); its /dev/shm is a tmpfs beside them. A
// pod with shareProcessNamespace also has an init, a container of its
// sandbox that is PID 1 of the PID namespace its containers share
// (pidns_linux.go); the sandbox is lost when the init ends.
package supervise
