// Package registry runs a real OCI registry (the docker-registry binary,
// Debian's package of the distribution registry) on loopback for tests.
//
// Contract:
//   - Start serves on 127.0.0.1 on a free port, from a temporary
//     directory of its own, and stops the registry at the test's cleanup.
//     With Options.User, pushes and pulls need that user's password
//     (htpasswd, bcrypt, made with apache2-utils' htpasswd); with
//     Options.TLS, it serves HTTPS with a certificate for 127.0.0.1 from a
//     test CA (test/testcerts) whose file is Registry.CAFile.
//   - A missing docker-registry or htpasswd stops the test through
//     prereq.Missing: a skip, or a failure under $PODVISOR_E2E_REQUIRED.
//   - Push copies an image from a containerd's content store into the
//     registry with containerd's own pusher.
//   - NewProxy serves plain HTTP on loopback in front of a registry and
//     passes, stalls (64 KiB, then nothing) or trickles (64 KiB every
//     200 ms) the bodies of blobs, for pull progress deadline tests.
//   - Nothing here reaches beyond loopback.
package registry
