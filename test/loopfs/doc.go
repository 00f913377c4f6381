// Package loopfs gives a test a loop device, or a filesystem of its own
// on one, over a sparse file: the small block-backed filesystems the
// quota, claim and raw block volume tests need, and the ext4 the disk
// pressure tests and the flash benchmark fill (MountExt4, which needs no
// testing.T, for the benchmark).
//
// Contract:
//   - Device, Mkfs, Mount and FS need root and the tools they run
//     (losetup and mount from mount, mkfs.<type> from e2fsprogs or
//     btrfs-progs); what is missing goes through prereq.Missing: a skip in
//     a plain go test, a failure naming the Debian package with
//     $PODVISOR_E2E_REQUIRED set.
//   - Every command runs with a bound; one that fails fails the test with
//     its output, except the mount Mount returns, so that a caller can
//     fall back to other options.
//   - What they make is undone when the test ends, through t.Cleanup: the
//     mount is lazily unmounted (MNT_DETACH), then the loop device
//     detached, then the files removed. Being cleanups, they run after
//     those registered later: a test that makes its filesystem before it
//     starts a daemon on it has the daemon stopped first. A failure to
//     undo is an error of the test, as t.TempDir's is.
//   - Files live in a directory of their own under $TMPDIR named
//     pv-loopfs-*, so that a leftover is easy to find.
//   - It imports nothing of podvisor but test/prereq, so the tests of
//     leaf packages can use it.
package loopfs
