package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NodeUsage is what the whole machine has used, read at one moment.
type NodeUsage struct {
	// CPUNanos is the CPU time spent on all CPUs since boot, idle and
	// iowait excluded (/proc/stat's user, nice, system, irq, softirq and
	// steal).
	CPUNanos uint64
	// WorkingSet is the memory in use less the inactive file cache
	// (MemTotal - MemFree - Inactive(file) of /proc/meminfo), as cAdvisor
	// counts the root cgroup's.
	WorkingSet uint64
	// Usage is the memory in use (MemTotal - MemFree), Available
	// MemAvailable.
	Usage, Available uint64
}

// userHZ is the unit of /proc/stat's times: 100 on every Linux
// architecture podvisor runs on (USER_HZ, fixed in the kernel's ABI).
const userHZ = 100

// ReadNode reads the machine's usage from the proc filesystem mounted at
// proc (such as /proc).
func ReadNode(proc string) (NodeUsage, error) {
	var u NodeUsage
	b, err := os.ReadFile(filepath.Join(proc, "stat"))
	if err != nil {
		return u, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return u, fmt.Errorf("%s/stat: first line %q is not the cpu line", proc, line)
	}
	var ticks uint64
	// user nice system idle iowait irq softirq steal: guest time is
	// already in user and nice.
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return u, fmt.Errorf("%s/stat: cpu field %d: %w", proc, i, err)
		}
		ticks += n
	}
	u.CPUNanos = ticks * (1e9 / userHZ)

	mf, err := os.Open(filepath.Join(proc, "meminfo"))
	if err != nil {
		return u, err
	}
	defer mf.Close()
	kb := map[string]uint64{}
	sc := bufio.NewScanner(mf)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch k {
		case "MemTotal", "MemFree", "MemAvailable", "Inactive(file)":
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return u, fmt.Errorf("%s/meminfo: %s: %w", proc, k, err)
			}
			kb[k] = n * 1024
		}
	}
	if err := sc.Err(); err != nil {
		return u, fmt.Errorf("%s/meminfo: %w", proc, err)
	}
	if kb["MemTotal"] == 0 {
		return u, fmt.Errorf("%s/meminfo: no MemTotal", proc)
	}
	u.Usage = kb["MemTotal"] - min(kb["MemFree"], kb["MemTotal"])
	u.WorkingSet = u.Usage - min(kb["Inactive(file)"], u.Usage)
	u.Available = kb["MemAvailable"]
	return u, nil
}
