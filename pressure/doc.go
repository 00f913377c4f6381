// Package pressure is node pressure as kubelet's eviction manager sees
// it: signals measured on the node (memory.available, nodefs.*, imagefs.*,
// pid.available), thresholds as kubelet's evictionHard / evictionSoft with
// grace periods and minimum reclaim, the node conditions they make
// (MemoryPressure, DiskPressure, PIDPressure) and the pod to evict when
// reclaiming node-level resources did not help.
//
// Contract:
//
//   - Observe only reads: the root cgroup's memory files (cgroup v1
//     memory.usage_in_bytes less total_inactive_file; v2 /proc/meminfo's
//     MemTotal-MemFree less the root memory.stat's inactive_file, as runc
//     and cAdvisor compute the root on v2), statfs of the state and log
//     directories (the worse of both) and of containerd's root, and
//     /proc's pid_max, threads-max and process count.
//   - A condition turns True when any of its thresholds is met, grace
//     period or not, and turns False only once none has been met for the
//     pressure transition period.
//   - A threshold acts (reclaim, then eviction) once met for its grace
//     period; once acted on it stays met until the signal is past the
//     threshold by its minimum reclaim.
//   - Reclaim comes first (dead containers, then unused images when the
//     images are on the pressed filesystem); the signal is measured again
//     and a pod is evicted only if a threshold is still met. At most one
//     pod is evicted per monitoring interval, ranked as kubelet ranks
//     (usage above requests first, then priority, then usage less
//     requests). A pod of priority system-node-critical or higher is never
//     evicted.
//   - Every change of the set of signals under pressure is told to the
//     Evicter (SetPressure), so that evicted static pods start again once
//     their pressure is gone.
package pressure
