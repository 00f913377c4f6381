// Package mounts turns a pod's volumes and per-pod files into runtime-spec
// mounts.
//
// Each pod sandbox has a directory owned by podvisor (Pod.Dir). Setup
// renders the pod's /etc/hosts, /etc/hostname and /etc/resolv.conf there
// (kubelet's and containerd's rules, see HostsFile and ResolvConf), creates
// emptyDir volumes under Dir/volumes/empty-dir (a tmpfs for medium Memory;
// their ready markers under Dir/volumes/empty-dir-ready),
// the roots of configMap, secret, downwardAPI and projected volumes under
// Dir/volumes/<kind> (a tmpfs for secret and projected), and checks
// hostPath volumes by type, as kubelet's volume plugins do. WriteVolume
// writes a configMap, secret, downwardAPI or projected volume's files with
// kubelet's atomic writer (versions in ..<timestamp> directories behind a
// ..data symlink swapped by one rename); the caller computes the files.
// ContainerMounts then lists the bind mounts of one container, and Cleanup
// unmounts and removes the directory when the pod is gone.
//
// Contract:
//   - Setup is idempotent and keeps data: after a podvisor restart it is run
//     again and never wipes emptyDir contents or remounts a tmpfs. It is run
//     again when the pod IPs become known; the files are rewritten in place so
//     containers that already bind-mount them see the change.
//   - Volumes other than emptyDir, hostPath, configMap, secret, downwardAPI,
//     projected, image and persistentVolumeClaim are rejected with an error
//     naming the volume; nothing is silently skipped.
//   - A persistentVolumeClaim's storage (PrepareClaim) is never removed with
//     the pod: a provisioned directory goes only through RemoveClaim, a
//     PersistentVolume's path never. Image volumes are the runtime's to mount (at
//     ImageVolumeDir, passed in Pod.ImageVolumes); ContainerMounts binds
//     them read-only, a subPath only to a directory of the image.
//   - A secret or projected volume's files are written only onto its tmpfs,
//     never to disk; configMap, secret, downwardAPI and projected volumes
//     are mounted read-only into containers.
//   - A pod's fsGroup gives its emptyDir and content volumes to that group
//     (kubelet's SetVolumeOwnership); hostPath volumes are never changed.
//     An emptyDir gets it on its root only, once, while it is new and
//     empty; a ready marker beside it (Dir/volumes/empty-dir-ready, out of
//     the containers' reach) keeps Setup run again from touching it. What a
//     container can write is never walked: the only trees walked are the
//     content volumes podvisor writes, and those by descriptor (openat2
//     beneath the directory, no symlink followed, each inode changed
//     through the descriptor that opened it).
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
