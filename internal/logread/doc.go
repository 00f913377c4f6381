// Package logread reads a container's CRI log files, as the log driver
// (internal/crilog) writes them, the way kubelet serves them to `kubectl
// logs`: lines, not records, optionally the last few, optionally from a
// time on, and optionally following the log as it grows.
//
// Contract:
//
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
//   - Tail keeps the last Tail lines of the first instance read, before
//     Since filters them (kubelet's order); Since keeps lines at or after
//     it.
//   - Follow reads to the end, then waits for more: when the live path
//     names a new file (rotation), it finishes the old file, reads the
//     rotated files it has not read, then goes on with the new live file;
//     it opens that first and lists the rotated files after, and does both
//     again if the live path has moved on by then, so that a file rotated
//     meanwhile (several rotations between two looks) is read too;
//     when Next names the container's next instance, it finishes this one
//     and goes on with that; it returns when Ended says the log is over
//     or ctx is done. Every line is emitted once.
package logread
