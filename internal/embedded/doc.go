// Package embedded runs podvisor's private containerd
// (--embedded-containerd): its own socket, pid file and config under the
// run dir (<run>/containerd), its own root under the state dir
// (<state>/containerd), the CRI plugins off.
//
// Contract:
//
//   - The daemon runs in its own session and its own cgroup (Cgroup, in
//     every hierarchy), so neither a signal to podvisor's process group nor
//     `systemctl restart podvisor` reaches it.
//   - Run never stops the daemon: pods outlive podvisor. A restarted
//     podvisor finds the running daemon through its pid file (checked to be
//     this binary running this config, not a reused pid) and keeps using
//     it.
//   - A daemon that dies, or fails to start, is started again after a
//     back-off (internal/backoff: 1 s doubling to 30 s, with jitter; reset
//     once it has run a minute).
//   - Ready is closed once a daemon, started or found, is up; Address is
//     its socket.
//   - Config renders the daemon's config.toml; the test environment
//     (test/testenv) uses the same generator, with Version, Major and
//     PrependPath.
package embedded
