// Package logread reads a container's CRI log files, as the log driver
// (internal/crilog) writes them, the way kubelet serves them to `kubectl
// logs`: lines, not records, optionally the last few, optionally from a
// time on, and optionally following the log as it grows.
//
// Contract:
//
//   - The live file is "<log dir>/<pod>/<container>/<n>.log", as
//     internal/layout lays logs out. The log directory is the one path
//     trusted (root's configuration); everything below it may have been
//     written by a pod with a hostPath volume of it, so every file is
//     opened beneath it with no symlink followed (openat2 with
//     RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or one O_NOFOLLOW openat per
//     component where the kernel has no openat2) and must be a regular
//     file. A symlink (as the live file, a rotated file, or the pod's or
//     container's directory), a FIFO, a device or a directory in a log
//     file's place is an error wrapping ErrRefused, naming it; nothing of
//     it is read, and opening it never blocks. A line longer than any
//     record the writer makes is skipped, not held.
//   - A container instance's log is its live file "<n>.log" and its
//     rotated files beside it: "<n>.log.<YYYYMMDD-HHMMSS>" (kubelet's
//     scheme), the same gzip compressed with ".gz", or the older
//     "<n>.log.1". They are read in name order, then the live file.
//     Other files ("<n>.log.dropped", "*.tmp") are not logs.
//   - Partial (P) records are joined, per stream, with the records after
//     them up to the full (F) one into one Line, stamped with the time of
//     that last record, so lines come out in file order with
//     non-decreasing times. A partial line left at the end of an instance
//     is a line. stdout and stderr come out interleaved as written.
//   - A line that is not a CRI record (a torn write) is skipped.
//   - Where output is missing, a line of podvisor's own on stderr says so,
//     as the writer's gap record does (kubelet says nothing; it does not
//     read rotated files at all): "podvisor: log output missing: rotated
//     log file <name> was removed before it was read" when a file listed
//     was gone before it was opened, and, when following, "podvisor: log
//     output may be missing: the log rotated more often than it was read,
//     and rotated files were removed" when the file held open was removed
//     (more rotations between two looks than the writer keeps files) and
//     the stamps cannot prove that the oldest rotated file left is the
//     next one.
//   - Tail keeps the last Tail lines of the first instance read, before
//     Since filters them (kubelet's order); Since keeps lines at or after
//     it.
//   - Follow reads to the end, then waits for more: when the live path
//     names a new file (rotation), it finishes the old file, reads the
//     rotated files it has not read, then goes on with the new live file;
//     it opens that first and lists the rotated files after, and does both
//     again if the live path has moved on by then, so that a file rotated
//     meanwhile (several rotations between two looks) is read too. The
//     old file is known among the rotated ones by its inode, or once
//     compressed by its content; if it is not there (removed), all the
//     rotated files not read yet are read;
//     when Next names the container's next instance, it finishes this one
//     and goes on with that; it returns when Ended says the log is over
//     or ctx is done. Every line is emitted once.
package logread
