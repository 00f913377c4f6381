// Package doctor checks the host podvisor runs on, as the troubleshooting
// table of the README does by hand: containerd, runc, cgroups, CNI, the
// sysctls pods need, the manifests directory, disk space, the clock, the
// manifests' images, the apiserver and podvisor itself. `podvisor doctor`
// prints its findings.
//
// Contract:
//
//   - Every check is a small function of Options, whose roots (ProcRoot,
//     CgroupRoot, the directories, the containerd address, PATH) tests
//     point at temporary directories. A check never changes the host.
//   - A check returns one Finding or more: ok, warn (works, but deserves a
//     look) or fail (pods will not run as they should). Every warn and
//     fail has a fix in one line.
//   - Everything that can hang (containerd, the API socket, the
//     apiserver, runc) is bounded by Options.Timeout.
//   - podvisor need not be running: its absence is a warning.
//   - The checks reuse the daemon's own code where it decides: package cni
//     picks the network, package manifest reads the directory (with its
//     permission rule and --allow-insecure-manifests), package pressure's
//     thresholds judge the disks.
package doctor
