// Package metrics is podvisor's Prometheus metrics and the resource figures
// of GET /stats: what its pods, probes, manifests and image imports are
// doing, and what each running container uses, read from its cgroup.
//
// Contract:
//
//   - Everything is registered on the Metrics' own registry, never on
//     Prometheus' global one; every series is prefixed podvisor_ (besides
//     the Go and process collectors' go_ and process_ series).
//   - What exists at scrape time is read at scrape time: pods by phase,
//     restarts and CPU and memory come from the status store's pods and the
//     containers' cgroup files (a few small reads per container, no call to
//     containerd). Only what happens between scrapes is counted as it
//     happens, through hooks given to the packages that see it: probe runs
//     (probes.Options.OnRun), manifest snapshots
//     (manifest.SourceOptions.Observer), image imports (Importer) and pod
//     starts (WatchStarts, from the store's own watch).
//   - A cgroup that cannot be read (the container just exited) leaves that
//     container's CPU and memory out of the scrape; it is never an error.
package metrics
