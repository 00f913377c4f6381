// Package rollout guards a running pod against a valid but broken change of
// its manifest. It sits between manifest.Source and the supervisor: when a
// manifest changes a pod whose running revision was Ready, the new revision
// must become Ready and stay Ready for min-ready within the progress
// deadline (annotations podvisor.io/progress-deadline-seconds and
// podvisor.io/min-ready-seconds, or the node's defaults); if it does not,
// the snapshots the supervisor sees carry the last good revision again,
// marked with status.RolloutAnnotation, until the file's content changes.
//
// Undo (podvisor rollout undo, on the local socket only) runs a kept
// revision until the file changes, but never one that grants more than the
// file's pod (BroaderPrivileges): only root widens what a pod may do, by
// editing the manifest. The rollback at a progress deadline makes the same
// check: when the last good revision grants more than the file, the file's
// revision keeps running, not Ready, with a RollbackRefused warning,
// rather than a privilege root took away coming back.
//
// Deciding is the pure Machine on times passed in; Controller does the
// I/O: snapshots in and out, pod status from the status store, events, and
// the revisions kept in the state directory (written only on a change).
package rollout
