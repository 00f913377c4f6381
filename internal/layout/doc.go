// Package layout is where podvisor keeps each thing on disk: one place that
// names every path under the state, run and log directories, used by the
// daemon, the CLI (logs), the tests and the benchmark alike.
//
// Contract:
//
//   - Paths are pure functions of the three roots and an object's identity;
//     nothing here touches the filesystem.
//   - State (survives reboots): <state>/pods/<uid>/{record.json,files,
//     termination/<container-id>}, <state>/events.jsonl,
//     <state>/manifests/state.json, <state>/images/state.json,
//     <state>/cni/{cache,networks},
//     <state>/node-name, <state>/podvisor.lock, and the embedded
//     containerd's root <state>/containerd.
//   - Run (gone at reboot): <run>/pods/<sandbox>/{net,ipc,shm},
//     <run>/podvisor.sock, the last good Secrets' values in
//     <run>/manifests/secrets.json (manifest.SecretsFile), and the
//     embedded containerd's socket, pid file and config in <run>/containerd.
//   - Logs: <logs>/<namespace>_<name>_<uid>/<container>/<restart>.log, as
//     kubelet lays out /var/log/pods.
//   - Cgroups, relative to each hierarchy's root: /<parent>/pod<uid> for a
//     pod and /<parent>/pod<uid>/<container-id> for its containers.
package layout
