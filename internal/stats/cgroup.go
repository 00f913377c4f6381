package stats

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podvisor/podvisor/internal/cgroupfs"
)

// Usage is what one cgroup has used, read at one moment.
type Usage struct {
	// CPUNanos is the CPU time of all its processes, on all CPUs, since the
	// cgroup was made.
	CPUNanos uint64
	// WorkingSet is the memory in use minus the inactive file cache, as
	// cAdvisor counts it (what kubelet evicts by, kubectl top shows).
	WorkingSet uint64
}

// Reader reads Usage from the cgroup hierarchies mounted at a root.
type Reader struct {
	root string
	v2   bool
}

// NewReader returns a Reader of the hierarchies under root (such as
// /sys/fs/cgroup), v1 or v2 as cgroupfs.IsV2 tells.
func NewReader(root string) Reader { return Reader{root: root, v2: cgroupfs.IsV2(root)} }

// Read returns the usage of cgroup rel (such as "/podvisor/pod<uid>/<id>").
// A cgroup that is gone (its container exited) is an error.
func (c Reader) Read(rel string) (Usage, error) {
	if c.v2 {
		dir := filepath.Join(c.root, rel)
		cpu, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			return Usage{}, err
		}
		ns, err := parseCPUStatV2(cpu)
		if err != nil {
			return Usage{}, fmt.Errorf("%s/cpu.stat: %w", dir, err)
		}
		ws, err := readWorkingSet(filepath.Join(dir, "memory.current"), filepath.Join(dir, "memory.stat"), "inactive_file")
		if err != nil {
			return Usage{}, err
		}
		return Usage{CPUNanos: ns, WorkingSet: ws}, nil
	}
	acct := filepath.Join(c.root, "cpuacct", rel, "cpuacct.usage")
	b, err := os.ReadFile(acct)
	if err != nil {
		return Usage{}, err
	}
	ns, err := parseUint(b)
	if err != nil {
		return Usage{}, fmt.Errorf("%s: %w", acct, err)
	}
	mem := filepath.Join(c.root, "memory", rel)
	ws, err := readWorkingSet(filepath.Join(mem, "memory.usage_in_bytes"), filepath.Join(mem, "memory.stat"), "total_inactive_file")
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPUNanos: ns, WorkingSet: ws}, nil
}

// readWorkingSet is the memory in use (usageFile) less the inactive file
// cache (key of statFile), never below 0: cAdvisor's working set, which
// kubelet evicts by and kubectl top shows.
func readWorkingSet(usageFile, statFile, key string) (uint64, error) {
	b, err := os.ReadFile(usageFile)
	if err != nil {
		return 0, err
	}
	used, err := parseUint(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", usageFile, err)
	}
	st, err := os.ReadFile(statFile)
	if err != nil {
		return 0, err
	}
	inactive, _, err := statValue(st, key)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", statFile, err)
	}
	return workingSet(used, inactive), nil
}

func workingSet(used, inactive uint64) uint64 {
	if inactive > used {
		return 0
	}
	return used - inactive
}

// parseCPUStatV2 returns the CPU time in cgroup v2's cpu.stat (usage_usec)
// in nanoseconds.
func parseCPUStatV2(b []byte) (uint64, error) {
	us, ok, err := statValue(b, "usage_usec")
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errors.New("no usage_usec")
	}
	return us * 1000, nil
}

// statValue returns the value of key in a flat-keyed cgroup file (lines
// "key value", as memory.stat and cpu.stat are); a missing key is 0.
func statValue(b []byte, key string) (uint64, bool, error) {
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %w", key, err)
		}
		return n, true, nil
	}
	return 0, false, nil
}

func parseUint(b []byte) (uint64, error) {
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
