// Package atomicfile replaces a file's content so that a crash at any point
// leaves either the old content or the new, never a mix or an empty file.
//
// Contract:
//
//   - Write writes a temporary file beside the target, fsyncs it, renames it
//     over the target and fsyncs the directory, so the rename itself is
//     durable.
//   - The temporary file never outlives a failed Write.
//   - The directory is created (0700) when missing: records and state may
//     hold Secrets.
package atomicfile
