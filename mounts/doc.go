// Package mounts turns a pod's volumes and per-pod files into runtime-spec
// mounts.
//
// Each pod sandbox has a directory owned by podvisor (Pod.Dir). Setup
// renders the pod's /etc/hosts, /etc/hostname and /etc/resolv.conf there
// (kubelet's and containerd's rules, see HostsFile and ResolvConf), creates
// emptyDir volumes under Dir/volumes/empty-dir (a tmpfs for medium Memory)
// and checks hostPath volumes by type, as kubelet's volume plugins do.
// ContainerMounts then lists the bind mounts of one container, and Cleanup
// unmounts and removes the directory when the pod is gone.
//
// Contract:
//   - Setup is idempotent and keeps data: after a podvisor restart it is run
//     again and never wipes emptyDir contents or remounts a tmpfs. It is run
//     again when the pod IPs become known; the files are rewritten in place so
//     containers that already bind-mount them see the change.
//   - Volumes other than emptyDir and hostPath are rejected with an error
//     naming the volume; nothing is silently skipped.
//   - subPath never leaves its volume: ".." and symlinks that lead outside are
//     rejected, and what runc mounts is a bind mount of the target opened by
//     file descriptor (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or an
//     O_NOFOLLOW walk), staged under Dir/volume-subpaths, so a symlink
//     swapped in after the check is refused instead of followed.
//   - Dir is 0700: a pod's files, volumes and staging mounts are root's
//     only (runc, running as root, is what reaches them).
//   - Cleanup unmounts everything mounted under Dir before removing it, and
//     refuses to remove a directory that still has mounts under it.
package mounts
