// Package stats is the resource use of containers: the figures GET /stats
// answers with (Stats, in the shape of kubelet's summary API) and the
// reading of them from cgroup files (Reader), shared by the metrics, the
// local API and podvisor top.
//
// Contract:
//
//   - Reader only reads: a few small files per cgroup, cgroup v1
//     (cpuacct.usage, memory.usage_in_bytes, memory.stat) or v2 (cpu.stat,
//     memory.current, memory.stat); a cgroup that is gone is an error, never
//     a zero.
//   - The working set is memory in use less the inactive file cache, never
//     below 0, as cAdvisor computes it.
package stats
