// Package daemon is podvisor's composition root: the typed Config that
// `podvisor run`'s flags and configuration file both fill, and Run, which
// builds every part from it (containerd client, CNI, status store,
// manifests source, rollout controller, supervisor, images watcher, API, mirror, metrics,
// /healthz, the node pressure manager, the service manager's
// notifications) and runs them.
//
// Contract:
//   - Config has one field per run flag; its yaml keys are the
//     configuration file's (apiVersion podvisor.io/v1alpha1, kind
//     PodvisorConfiguration). AddFlags defines the flags, Load merges a
//     file under the command line, WriteConfig writes a file that Load
//     reads back to the same Config (`podvisor config view`). A structured
//     setting no flag mirrors is a section of the file (configSections:
//     runtimeClasses), with its own reader and writer.
//   - NodeWarnings checks a pod against the node's configuration for
//     `podvisor validate` (nodeChecks, one function per check).
//   - Validate is the one place values are checked; Run calls it before
//     anything starts. Each bad value is refused naming its flag (or, from
//     a file, FILE:LINE: key) and why; every such error matches ErrInvalid.
//   - Run owns every goroutine it starts: each is a member of an errgroup,
//     ends when its context ends, and the first one to fail stops all.
//   - Start-up's memory is given back twice, once the supervisor synced
//     and once every pod settled (Ready or ended; at most 2 minutes
//     later): the heap's free pages, and the pages of podvisor's own
//     binary that package initialisation touched (internal/residency).
//     Nothing of it runs at rest.
//   - Nothing Run does stops a pod but an eviction for node pressure
//     (package pressure, through the supervisor's StopPod): pods keep
//     running after it returns.
//
// Shutdown order (the only one):
//  1. The trigger: ctx ends (SIGINT, SIGTERM), --exit-when-empty finds
//     every pod stopped and removed, or a part fails (its error is Run's).
//  2. Every part sees its context end together and returns: the service
//     manager is told STOPPING=1; the supervisor stops its pod workers
//     (never the pods); the API stops, its exec and attach sessions ended;
//     the manifests watch, the rollout controller, the images watcher, the pressure manager, the
//     mirror, the metrics watch and /healthz end; the keeper of --embedded-containerd returns
//     (containerd itself and the pods' shims keep running).
//  3. Once every part has returned, the event journal closes (no one
//     records an event any more), then the containerd client (no worker or
//     session uses it any more).
//  4. Last, the state-dir lock is released: another podvisor may start.
package daemon
