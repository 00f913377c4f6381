// Package procfs lists the host's processes with their command lines, for
// the runtime's search for idle shims and for test tooling that finds the
// processes it started.
//
// Contract:
//
//   - List reads /proc once; a process that exits meanwhile, or has no
//     command line (a kernel thread), is left out.
//   - Matching is List with a filter on the first argument, applied before
//     the command line is split.
package procfs
