// Package images keeps the images directory imported: every image archive
// (*.tar: an OCI image layout or a `docker save` archive) in it is handed
// to an Importer at start and again whenever it has been completely
// written. It also names the images of an archive as docker would
// (RefTranslator). The import itself (containerd) is the caller's: it sits
// behind Importer. Info is how the runtime describes an image it holds to
// the local API (neither imports the other).
//
// Contract:
//
//   - Run imports every archive in the directory first, in name order,
//     with the directory already watched, and then closes Ready: an archive
//     completed after it is never missed. Ready is closed even when the
//     directory cannot be watched. Wait(image) returns as soon as that
//     first pass has imported an archive naming the image (normalized as
//     Normalize does), or at Ready: a caller waits for its own image, not
//     for every archive.
//   - After that an archive is imported when inotify reports it complete:
//     closed after writing (IN_CLOSE_WRITE) or renamed in (IN_MOVED_TO).
//     A file still being written is not imported because of another
//     archive's event; only a pass over the whole directory (at start, when
//     the directory appears or is replaced, after an inotify overflow) may
//     find one, and it is imported again once complete.
//   - A missing directory is waited for (inotify.Watch watches its parent);
//     dotfiles and names not ending in .tar are never archives.
//   - An archive unchanged (size, modification time and inode) since its
//     last import is not imported again. With StateFile and Digests, that
//     holds across restarts: the state file records each imported archive
//     and its images' digests, and an unchanged archive whose images are
//     all still there with those digests is skipped at start (its images
//     are let go to Wait as an import's are). A missing, broken or
//     other-version state file, or digests that cannot be looked up, mean
//     the archive is imported. A failed import is logged and retried
//     with back-off (internal/backoff: 1 s doubling to 30 s, with jitter),
//     and at once when the archive is written again.
//   - OnImport is called after every pass that imported at least one
//     archive, so that pods waiting for an image try again.
//   - Each pass checks the directory and its parents, and each archive
//     before its import, with internal/trust (owner not root or
//     TrustedUID, group- or world-writable): an archive replaces an image
//     by name, so whoever can write it chooses what runs as root. The
//     checks walk the path by descriptor, symlink hops included (the
//     directory holding a link, or holding an archive reached through
//     one, must not be writable by others even with the sticky bit), and
//     the Importer reads from the descriptor that was checked: an archive
//     swapped after its check is not what is imported. Every
//     problem is logged and told to OnWarning once while it lasts. Without
//     AllowInsecure the archive (or, for the directory's problems, every
//     archive) is not imported, as a manifest is not used; it is looked
//     at again with the failed imports' back-off, so fixing it is enough.
//     With AllowInsecure it is imported all the same.
//   - Run's state belongs to its goroutine; Run ends with its context.
package images
