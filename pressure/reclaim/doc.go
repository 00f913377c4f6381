// Package reclaim frees disk space as kubelet's garbage collectors do,
// before the node-pressure manager evicts anything: unused images (image
// GC with high and low thresholds, oldest last use first) and what dead
// containers leave behind (their logs beyond the rotation limits, the log
// directories of pods that no longer exist).
//
// Contract:
//
//   - An image is never removed while it is pinned: named by any pod of
//     the current manifests snapshot (init, sidecar and app containers;
//     the snapshot holds the last-known-good spec of a broken manifest),
//     imported from an archive of the images dir since start, or the
//     image of any container in podvisor's namespace. Names are compared
//     as containerd stores them (images.Normalize); a name given by
//     digest pins that digest. Nothing is removed until the first
//     snapshot and the images dir's first pass are in (Ready).
//   - Images are grouped by digest: several names of one digest are one
//     image's content. A digest any pinned name points at is pinned, so
//     no name of it is removed; an unpinned digest goes with all its
//     names, its size counted once.
//   - Selection (plan) is pure: unpinned digests whose newest name is at
//     least MinAge old, ordered by last use (never used first), then by
//     age, removed until enough is freed. With MaxAge, a digest unused
//     for longer (or, never used, present for longer) goes whatever the
//     disk, once podvisor has run for MaxAge.
//   - Last use is when a pod of the manifests or a container last named
//     the image: kept in memory and written to the state file only when
//     an image starts or stops being used, never on a timer.
//   - Run checks the image filesystem with one statfs every Period; only
//     above HighThresholdPercent does it list images, and frees down to
//     LowThresholdPercent. ReclaimImages frees a given amount at once (the
//     pressure manager's call). Each removal is logged and recorded as a
//     Normal ImageGarbageCollected event; a pass that cannot free enough
//     records FreeDiskSpaceFailed, one that fails ImageGCFailed, once per
//     episode.
//   - Logs: SweepLogs (Run calls it once every pod found at start is
//     known and after each PodRemoved; ReclaimContainers too) removes
//     rotated files beyond the rotation limit of every container log
//     under LogDir, and the "<namespace>_<name>_<uid>" directories of
//     pods that neither the snapshot, nor a record in the state dir, nor
//     a container names. Names are validated, symlinks never followed nor
//     removed, anything else left alone.
package reclaim
