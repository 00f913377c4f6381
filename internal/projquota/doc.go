// Package projquota limits the space a directory tree may use with a
// filesystem project quota, as xfs and ext4 (with the project feature,
// mounted with prjquota) provide: the directory is given a project ID
// with the inherit flag, so that everything created below it counts
// against that project, and the project gets a hard block limit. A write
// past the limit fails with EDQUOT.
//
// Contract:
//   - Set is idempotent and changes nothing that already holds: a
//     directory that has its project ID and a project whose limit is
//     already the one asked for are left alone.
//   - Where the filesystem cannot (no project feature, quotas not
//     enabled, another filesystem), Set returns an error wrapping
//     ErrUnsupported that says why; the directory is unchanged then.
//   - Only files created after the directory got its project ID count:
//     a directory that held files before keeps those outside the quota.
package projquota
