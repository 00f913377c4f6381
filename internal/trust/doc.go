// Package trust says whether a path that decides what podvisor runs as
// root (a manifest, an image archive, their directories) can be changed by
// someone other than root or the trusted user.
//
// Contract:
//
//   - A path is untrusted when it is owned by a uid other than 0 and the
//     trusted uid, or when its mode is group- or world-writable. A
//     world-writable parent directory with the sticky bit (/tmp) is fine:
//     others cannot replace what they do not own in it; a leaf (the
//     directory or file itself) must not be writable by others at all.
//   - Dir checks a directory and every parent up to /; a path that does
//     not exist has no problems. Nothing is changed: the caller decides
//     whether to warn or refuse.
//   - Open, ReadFile, ReadTrusted, CheckFile and CheckDir walk the path
//     one component at a time from the descriptor of the directory before
//     it, never following a link by path: each directory is checked on
//     its descriptor, a symlink is followed by hand (the directory holding
//     it, and the directory of a file reached through one, must not be
//     writable by others even with the sticky bit), and the file is
//     checked with fstat on the descriptor that is then read. What is
//     read is what was checked.
//   - Where the owner is unknown (not Linux), only the mode is checked.
package trust
