// Package cni owns pod network namespaces and their CNI attachments.
//
// A pod sandbox gets a network namespace bind-mounted at a path chosen by
// the caller (NewNetNS), is attached with CNI ADD (Manager.Add), checked with
// CHECK and detached with DEL. Every pod is attached to two networks, in this
// order: a loopback network that brings "lo" up (as containerd's CRI does)
// and the primary network, read on each Add from the first config file in
// the configuration directory or, when there is none, the built-in
// "podvisor" bridge network.
//
// Contract:
//   - DEL is idempotent and works after a podvisor restart: it runs with the
//     configuration libcni cached at ADD time (Config.CacheDir), so a changed
//     configuration directory does not leak addresses, and it works when
//     the network namespace is already gone.
//   - A failed Add runs DEL before returning, so a retried Add starts clean.
//   - The cache directory belongs to this package alone: Attachments lists it
//     and GC deletes every attachment the caller no longer owns.
//   - Network namespaces outlive podvisor: they are bind mounts, owned by the
//     caller, removed with RemoveNetNS.
package cni
