package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podvisor/podvisor/internal/cgroupfs"
	v1 "k8s.io/api/core/v1"
)

// Kubelet's CPU conversions (pkg/kubelet/cm/helpers_linux.go).
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	milliCPUToCPU = 1000
	quotaPeriod   = 100000 // µs, kubelet's default cpuCFSQuotaPeriod
	minQuota      = 1000   // µs
)

// cpuShares converts a CPU request in millicores to cgroup v1 cpu.shares,
// as kubelet's MilliCPUToShares does (no request means the minimum, 2).
func cpuShares(milli int64) uint64 {
	if milli == 0 {
		return minShares
	}
	s := milli * sharesPerCPU / milliCPUToCPU
	return uint64(min(max(s, minShares), maxShares))
}

// cpuQuota converts a CPU limit in millicores to a CFS quota for
// quotaPeriod, as kubelet's MilliCPUToQuota does; 0 means no limit.
func cpuQuota(milli int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*quotaPeriod/milliCPUToCPU, minQuota)
}

// sharesToWeight maps cgroup v1 shares to a v2 cpu.weight the way runc and
// kubelet do (1..10000, 1024 shares → 39).
func sharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	return 1 + ((shares-2)*9999)/262142
}

// containerResources turns one container's requests and limits into cgroup
// values (pkg/kubelet/kuberuntime/kuberuntime_container_linux.go).
func containerResources(c *v1.Container) Resources {
	req, lim := c.Resources.Requests, c.Resources.Limits
	cpuReq := req.Cpu().MilliValue()
	if _, ok := req[v1.ResourceCPU]; !ok {
		// Kubernetes defaults a missing request to the limit.
		cpuReq = lim.Cpu().MilliValue()
	}
	return Resources{
		CPUShares:   cpuShares(cpuReq),
		CPUQuota:    cpuQuota(lim.Cpu().MilliValue()),
		CPUPeriod:   quotaPeriod,
		MemoryLimit: lim.Memory().Value(),
	}
}

// podResources sums the pod's containers as kubelet's pod cgroup does
// (pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod): shares from the
// sum of requests; quota and memory limit only when every app container has
// one, and never below the largest init container's.
func podResources(spec *v1.PodSpec) Resources {
	if podLevelSet(spec) {
		return podLevelCgroup(spec)
	}
	var cpuReq, cpuLim, memLim int64
	cpuLimited, memLimited := true, true
	for i := range spec.Containers {
		c := &spec.Containers[i]
		r := containerResources(c)
		if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
			cpuReq += q.MilliValue()
		} else if q, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
			cpuReq += q.MilliValue()
		}
		if r.CPUQuota == 0 {
			cpuLimited = false
		} else {
			cpuLim += c.Resources.Limits.Cpu().MilliValue()
		}
		if r.MemoryLimit == 0 {
			memLimited = false
		} else {
			memLim += r.MemoryLimit
		}
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cpuReq = max(cpuReq, c.Resources.Requests.Cpu().MilliValue())
		if l := c.Resources.Limits.Cpu().MilliValue(); l == 0 {
			cpuLimited = false
		} else {
			cpuLim = max(cpuLim, l)
		}
		if l := c.Resources.Limits.Memory().Value(); l == 0 {
			memLimited = false
		} else {
			memLim = max(memLim, l)
		}
	}
	r := Resources{CPUShares: cpuShares(cpuReq), CPUPeriod: quotaPeriod}
	if cpuLimited {
		r.CPUQuota = cpuQuota(cpuLim)
	}
	if memLimited {
		r.MemoryLimit = memLim
	}
	return r
}

// cgroupFile is one value written into a cgroup directory. Controller is the
// v1 hierarchy ("cpu", "memory"); empty on v2.
type cgroupFile struct {
	Controller string
	Name       string
	Value      string
}

// cgroupFiles translates resources into the files of cgroup v1 or v2, and
// pids, the pod's pids limit (kubelet's podPidsLimit; 0 or less: none), into
// pids.max (the v1 pids hierarchy or the v2 file).
func cgroupFiles(v2 bool, r Resources, pids int64) []cgroupFile {
	var pidsFiles []cgroupFile
	if pids > 0 {
		ctl := "pids"
		if v2 {
			ctl = ""
		}
		pidsFiles = []cgroupFile{{Controller: ctl, Name: "pids.max", Value: strconv.FormatInt(pids, 10)}}
	}
	if v2 {
		cpuMax := "max " + strconv.Itoa(quotaPeriod)
		if r.CPUQuota > 0 {
			cpuMax = fmt.Sprintf("%d %d", r.CPUQuota, quotaPeriod)
		}
		mem := "max"
		if r.MemoryLimit > 0 {
			mem = strconv.FormatInt(r.MemoryLimit, 10)
		}
		return append([]cgroupFile{
			{Name: "cpu.weight", Value: strconv.FormatUint(sharesToWeight(r.CPUShares), 10)},
			{Name: "cpu.max", Value: cpuMax},
			{Name: "memory.max", Value: mem},
		}, pidsFiles...)
	}
	quota := "-1"
	if r.CPUQuota > 0 {
		quota = strconv.FormatInt(r.CPUQuota, 10)
	}
	mem := "-1"
	if r.MemoryLimit > 0 {
		mem = strconv.FormatInt(r.MemoryLimit, 10)
	}
	return append([]cgroupFile{
		{Controller: "cpu", Name: "cpu.shares", Value: strconv.FormatUint(r.CPUShares, 10)},
		{Controller: "cpu", Name: "cpu.cfs_period_us", Value: strconv.Itoa(quotaPeriod)},
		{Controller: "cpu", Name: "cpu.cfs_quota_us", Value: quota},
		{Controller: "memory", Name: "memory.limit_in_bytes", Value: mem},
	}, pidsFiles...)
}

// cgroups knows where this host mounts its cgroup hierarchies.
type cgroups struct {
	root string // /sys/fs/cgroup
	v2   bool   // unified hierarchy with controllers
	pids int64  // every pod cgroup's pids.max; 0 or less: none
}

func detectCgroups(root string, pids int64) cgroups {
	return cgroups{root: root, v2: cgroupfs.IsV2(root), pids: pids}
}

// dirs lists the directories of relative cgroup path rel in every mounted
// hierarchy (for removal).
func (c cgroups) dirs(rel string) []string { return cgroupfs.Dirs(c.root, rel) }

// apply creates cgroup rel and writes r and the pids limit into it. On v2 it
// first enables the cpu and memory (and pids) controllers along the path. A
// pids limit on a host without the pids controller is an error, not a
// limit silently dropped.
func (c cgroups) apply(rel string, r Resources) error {
	if c.v2 {
		if err := c.enableV2Controllers(rel); err != nil {
			return err
		}
	} else if c.pids > 0 {
		if _, err := os.Stat(filepath.Join(c.root, "pids")); err != nil {
			return fmt.Errorf("pids limit %d: no cgroup v1 pids hierarchy at %s (--pod-pids-limit=-1 runs without one)", c.pids, filepath.Join(c.root, "pids"))
		}
	}
	for _, f := range cgroupFiles(c.v2, r, c.pids) {
		dir := filepath.Join(c.root, f.Controller, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(f.Value), 0o644); err != nil {
			return fmt.Errorf("write cgroup %s/%s=%s: %w", dir, f.Name, f.Value, err)
		}
	}
	return nil
}

func (c cgroups) enableV2Controllers(rel string) error {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	dir := c.root
	ctls := "+cpu +memory"
	if c.pids > 0 {
		ctls += " +pids"
	}
	for _, p := range parts {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(ctls), 0o644); err != nil {
			return fmt.Errorf("enable cgroup controllers %q in %s: %w", ctls, dir, err)
		}
		dir = filepath.Join(dir, p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// remove deletes cgroup rel (and any empty children) in every hierarchy.
func (c cgroups) remove(rel string) error {
	var errs []error
	for _, d := range c.dirs(rel) {
		if err := removeCgroupTree(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeCgroupTree(dir string) error { return cgroupfs.RemoveTree(dir) }

// oomKills returns how many processes the kernel's OOM killer killed in
// cgroup rel (memory.oom_control's oom_kill on v1, memory.events' on v2),
// or 0 when it cannot tell.
func (c cgroups) oomKills(rel string) int {
	file := filepath.Join(c.root, "memory", rel, "memory.oom_control")
	if c.v2 {
		file = filepath.Join(c.root, rel, "memory.events")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok {
			v, _ := strconv.Atoi(strings.TrimSpace(n))
			return v
		}
	}
	return 0
}
