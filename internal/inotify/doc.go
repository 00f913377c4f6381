// Package inotify is podvisor's one way to watch a directory: the manifests
// directory and the images directory are both watched by Watch. Both read
// raw inotify because they act on close-write and moved-to (a file is
// complete), which fsnotify does not expose portably.
//
// Contract:
//
//   - Watch watches a directory that may be missing at start, be removed
//     and come back, or be a symlink swapped atomically (Kubernetes' ..data
//     style): it also watches the parent for the directory's own entry, and
//     moves the watch to whatever directory the path names now. The caller
//     hears DirChanged when the directory may have appeared, gone or been
//     replaced, and DirWatched each time a directory is watched anew, since
//     what it held before was never reported.
//   - Where the parent cannot be watched (it is missing too, or not
//     readable), or the directory exists but cannot be watched, the path is
//     looked at again every Options.Poll.
//   - Events, the caller's step and every watch change happen on Watch's
//     goroutine, in order; the caller needs no lock for its own state.
//   - Watch ends with its context (returning ctx.Err()), when step fails
//     (returning that error), or when inotify itself fails. It leaves no
//     file descriptor behind.
//   - Each decodes a buffer of raw records; Watch uses it, tests may too.
//
// Off Linux, Watch fails at once.
package inotify
