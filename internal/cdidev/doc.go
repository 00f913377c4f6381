// Package cdidev reads the node's Container Device Interface (CDI) specs
// and injects their devices into OCI specs.
//
// Contract:
//
//   - The spec dirs are read again on every question (no watcher, no
//     goroutine): a vendor's tool that rewrites its spec is seen at the
//     next pod admission, and nothing runs at rest.
//   - A kind ("vendor/class", an extended resource name such as
//     nvidia.com/gpu) counts its devices by name, the device named "all"
//     left out: "all" stands for every other device of the spec, never for
//     one more.
//   - Later dirs take precedence over earlier ones, as the CDI library
//     and containerd order them; two specs of one priority that define the
//     same device hide it.
//   - Injection applies the spec's and the devices' container edits
//     (device nodes with their cgroup rules, env, mounts, hooks) as the
//     CDI library does for containerd.
package cdidev
