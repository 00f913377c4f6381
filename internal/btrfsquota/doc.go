// Package btrfsquota limits the space a directory tree may use on btrfs,
// where project quotas do not exist: the directory is a subvolume of its
// own, and the subvolume's level-0 qgroup (0/<subvolume ID>) gets a limit
// on the bytes it refers to. A write past the limit fails with EDQUOT.
//
// Quotas are a setting of the whole filesystem, with a cost on every
// write: this package never enables them. Where the operator has not
// (`btrfs quota enable <mount>`), Set and Check say so.
//
// A level-0 qgroup counts its own subvolume only: a subvolume made inside
// the limited one (anyone who may write there may make one) is not
// counted, nor would it be by a higher-level qgroup the limited one is
// assigned to, as a new subvolume joins none. Nested lists them.
//
// Contract:
//   - Create makes a subvolume where a plain directory would be made;
//     Destroy removes one with everything in it, the subvolumes nested in
//     it deleted first, walking nothing.
//   - Set is idempotent and changes nothing that already holds: a qgroup
//     whose limit is already the one asked for is left alone.
//   - Where the filesystem cannot enforce (not btrfs, quotas not enabled,
//     no CAP_SYS_ADMIN in the host's user namespace, a plain directory
//     rather than a subvolume), Set and Check return an error wrapping
//     ErrUnsupported that says why and what would fix it.
//   - Check and Nested change nothing.
package btrfsquota
