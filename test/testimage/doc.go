// Package testimage builds small container image archives locally, with no
// registry, from a static busybox binary (Debian's busybox-static).
//
// Build writes an OCI image-layout tar and BuildDockerArchive a `docker save`
// style tar; both hold one image for linux on the host's architecture with a
// single layer: /bin/busybox, a symlink per applet, the usual top-level
// directories, /etc/passwd and /etc/group, plus any extra files the caller
// names. Output is deterministic: every timestamp and owner is fixed and
// entries are sorted, so the same inputs always give the same digests.
//
// Both archives import into containerd under the full reference in
// Options.Ref with a plain client.Import(ctx, r) and no import options: the
// OCI index carries the "io.containerd.image.name" annotation, which
// containerd prefers over "org.opencontainers.image.ref.name" (the tag
// alone), and the docker archive's RepoTags are normalized by containerd
// (busybox:latest becomes docker.io/library/busybox:latest).
package testimage
