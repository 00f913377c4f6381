// Package cgroupfs finds cgroup directories on a host with cgroup v1
// (one hierarchy per controller) or v2 (one unified hierarchy), for the
// supervisor's pod cgroups and the embedded containerd's own.
//
// Contract:
//
//   - A root is v2 when it holds cgroup.controllers; otherwise every
//     directory under it is a v1 hierarchy.
//   - Dirs never creates anything; RemoveTree removes only empty cgroups
//     (the kernel refuses others) and ignores what is already gone.
package cgroupfs
