// Package residency gives back the memory podvisor's start-up used and
// its rest does not: the pages of its own executable that only package
// initialisation and the first pods' starts touched, and the heap freed
// since.
//
// Why it is needed: the Go runtime maps the executable; a page of it is
// resident once touched, and stays so. Package initialisation (the
// Kubernetes API types' registrations and feature gates, protobuf
// descriptors, the validation tables) and the reflection it does touch
// type data, code and the function tables (.gopclntab) all over the
// binary, and the kernel maps every touched page's neighbours with it
// (fault-around, 64 KiB). Measured at rest with 30 pods, 45 MiB of
// podvisor's 62 MiB resident set was its binary, of which about 8 MiB is
// touched again later (see the README's footprint section).
//
// Contract:
//
//   - Release asks the kernel to reclaim the executable's read-only
//     mappings (its code, read-only data and function tables), never a
//     writable one: MADV_PAGEOUT frees the pages no other process maps,
//     then MADV_DONTNEED drops this process's hold on the rest (on a
//     read-only private file mapping that is all it does: a page another
//     process maps stays in the page cache). A page touched again is read
//     back from the page cache or the file, as any file page the kernel
//     reclaims under pressure: nothing is lost, only what stays untouched
//     stays out.
//   - Release, the first time, also turns off fault-around for those
//     mappings (Linux 6.7 and later; see noFaultAround): a page touched
//     again comes back alone, not with the up to 15 neighbours the page
//     cache holds. Without it, what podvisor touches at rest (the
//     runtime's stack scans and type data, a relist's code) is only a
//     few MiB, scattered, and fault-around maps about three times as much
//     back within a minute. Where the kernel cannot, it stays on and
//     the report says why.
//   - Release returns the heap's free memory to the system
//     (debug.FreeOSMemory).
//   - It reports the resident set before and after; it never fails the
//     caller: a kernel that refuses the advice leaves things as they were
//     and says why.
package residency
