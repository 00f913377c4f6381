// Package crilog writes and reads container logs in the CRI log format that
// kubelet and kubectl use: one line per record,
//
//	<RFC3339Nano timestamp> <stdout|stderr> <P|F> <content>
//
// where P marks a partial line (the writer split a long line) and F the
// full or final piece. podvisor runs the writer as containerd's "binary"
// log driver (podvisor-log-driver, or `podvisor log-driver`), a process the
// shim starts per task, so container output keeps flowing to its file while
// podvisor itself is stopped or being upgraded.
//
// Contract:
//
//   - A container never blocks on its log. The driver reads both streams
//     until they end, whatever happens to writes: a record the file cannot
//     take (ENOSPC, a failed rotation, any write error) is dropped and
//     counted, as containerd's CRI logger does. While writes fail, the
//     driver tries again about once a second, on the first record after
//     that, reopening the file by path (so a log deleted to free space
//     lets go of its space); records in between are dropped without a
//     system call, so a full disk costs no busy loop.
//   - A short write is truncated away, so the file holds whole records.
//   - When writing resumes, the first line written is a gap record on
//     stderr that says what is missing (format below), so readers of the
//     log see the gap.
//   - Drops are reported beside the log, in its status file (below).
//   - Logs rotate by size as kubelet's (Policy): a file that would grow
//     past MaxSize is renamed to "<log>.<YYYYMMDD-HHMMSS>" (StampLayout, in
//     UTC; a rotation in the same second as the one before takes the next
//     second, so names are unique and sort in time order). Every rotated
//     file but the most recent is gzipped to "<log>.<stamp>.gz" by a
//     goroutine of its own, never on the write path, through
//     "<log>.<stamp>.tmp" renamed when complete (a compression that fails
//     removes it and keeps the plain file); the oldest are removed so that
//     at most MaxFiles files exist, the live one included. Rotated lists
//     them in order. A temporary file is locked (flock) while written; one
//     no one holds is stale (its driver died) and the next Writer in the
//     directory removes it.
//
// The gap record's content is
//
//	podvisor: log output dropped: <bytes> bytes in <lines> lines from <RFC3339> to <RFC3339> (<reason>)
//
// counting that gap alone; bytes are of record content, line ends not
// counted.
//
// The status file is "<log>.dropped" (DropsPath): one JSON object of Drops,
// padded with spaces to a fixed size,
//
//	{"lines":N,"bytes":N,"since":"<first drop>","last":"<latest drop>","reason":"write: no space left on device","gaps":N}
//
// counting every drop of that log file since it was first opened, never
// reset; gaps counts the episodes (a gap record each, once writing
// resumes). The driver creates it, with zero counts, when it opens the log and
// rewrites it in place, so that updating it needs no new space on a full
// disk. It is written at the first drop of a gap, then at most about once a
// second while drops go on, and when the driver ends; a failed write of it
// is retried. ReadDrops reads it; a missing or empty file means no drops.
// Whoever removes a log removes its status file too (RemoveAll).
package crilog
