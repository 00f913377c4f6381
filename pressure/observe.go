package pressure

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podvisor/podvisor/internal/cgroupfs"
	"golang.org/x/sys/unix"
)

// Observation is one signal measured: how much is available of its
// capacity (bytes, inodes or pids).
type Observation struct {
	Available uint64
	Capacity  uint64
}

// Observations are the signals measured at one moment; a signal that
// could not be measured is missing.
type Observations map[Signal]Observation

// Observer measures the signals.
type Observer struct {
	// CgroupRoot is where the cgroup hierarchies are mounted
	// (/sys/fs/cgroup when empty); ProcRoot is /proc when empty.
	CgroupRoot string
	ProcRoot   string
	// NodeFS are directories whose filesystems are nodefs (the state and
	// log directories): the fuller of them is measured.
	NodeFS []string
	// ImageFS is a directory of containerd's image filesystem (its
	// snapshotter root); empty: nodefs's.
	ImageFS string
}

// Observe measures every signal it can; the errors of those it could
// not are joined.
func (o Observer) Observe() (Observations, error) {
	obs := Observations{}
	var errs []error
	if m, err := o.memory(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", MemoryAvailable, err))
	} else {
		obs[MemoryAvailable] = m
	}
	var node *fsStat
	for _, dir := range o.NodeFS {
		st, err := statFS(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("nodefs: %w", err))
			continue
		}
		node = fuller(node, st)
	}
	if node != nil {
		obs[NodeFsAvailable], obs[NodeFsInodesFree] = node.bytes, node.inodes
	}
	img := node
	if o.ImageFS != "" {
		st, err := statFS(o.ImageFS)
		if err != nil {
			errs = append(errs, fmt.Errorf("imagefs: %w", err))
			img = nil
		} else {
			img = st
		}
	}
	if img != nil {
		obs[ImageFsAvailable], obs[ImageFsInodesFree] = img.bytes, img.inodes
	}
	if p, err := o.pids(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", PIDAvailable, err))
	} else {
		obs[PIDAvailable] = p
	}
	return obs, errors.Join(errs...)
}

func (o Observer) cgroupRoot() string {
	if o.CgroupRoot == "" {
		return "/sys/fs/cgroup"
	}
	return o.CgroupRoot
}

func (o Observer) procRoot() string {
	if o.ProcRoot == "" {
		return "/proc"
	}
	return o.ProcRoot
}

// memory is memory.available as kubelet computes it: the machine's
// memory (MemTotal) less the root cgroup's working set. The working set
// is usage less inactive file cache, as cAdvisor's; the root's usage is
// memory.usage_in_bytes on cgroup v1 and, on v2, where the root has no
// memory.current, MemTotal-MemFree as runc's statsFromMeminfo gives it.
func (o Observer) memory() (Observation, error) {
	info, err := readMeminfo(filepath.Join(o.procRoot(), "meminfo"))
	if err != nil {
		return Observation{}, err
	}
	total, ok := info["MemTotal"]
	if !ok {
		return Observation{}, errors.New("no MemTotal in meminfo")
	}
	root := o.cgroupRoot()
	var usage, inactive uint64
	if cgroupfs.IsV2(root) {
		free, ok := info["MemFree"]
		if !ok {
			return Observation{}, errors.New("no MemFree in meminfo")
		}
		usage = total - min(free, total)
		if inactive, err = statKey(filepath.Join(root, "memory.stat"), "inactive_file"); err != nil {
			return Observation{}, err
		}
	} else {
		b, err := os.ReadFile(filepath.Join(root, "memory", "memory.usage_in_bytes"))
		if err != nil {
			return Observation{}, err
		}
		if usage, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
			return Observation{}, fmt.Errorf("memory.usage_in_bytes: %w", err)
		}
		if inactive, err = statKey(filepath.Join(root, "memory", "memory.stat"), "total_inactive_file"); err != nil {
			return Observation{}, err
		}
	}
	ws := usage - min(inactive, usage)
	return Observation{Available: total - min(ws, total), Capacity: total}, nil
}

// readMeminfo reads /proc/meminfo's values in bytes.
func readMeminfo(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		mult := uint64(1)
		if n, ok := strings.CutSuffix(v, " kB"); ok {
			v, mult = n, 1024
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			continue
		}
		out[k] = n * mult
	}
	return out, nil
}

// statKey is key's value in a flat-keyed cgroup file such as memory.stat.
func statKey(path, key string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", path, key, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}

// pids is pid.available as kubelet computes it: the smaller of pid_max
// and threads-max, less the processes (threads) running, as sysinfo(2)
// counts them.
func (o Observer) pids() (Observation, error) {
	var limit uint64
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		b, err := os.ReadFile(filepath.Join(o.procRoot(), f))
		if err != nil {
			return Observation{}, err
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return Observation{}, fmt.Errorf("%s: %w", f, err)
		}
		if limit == 0 || n < limit {
			limit = n
		}
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return Observation{}, fmt.Errorf("sysinfo: %w", err)
	}
	running := uint64(si.Procs)
	return Observation{Available: limit - min(running, limit), Capacity: limit}, nil
}

// fsStat is a filesystem's bytes and inodes.
type fsStat struct {
	dev           uint64
	bytes, inodes Observation
}

func statFS(dir string) (*fsStat, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(s.Bsize)
	return &fsStat{
		bytes:  Observation{Available: s.Bavail * bs, Capacity: s.Blocks * bs},
		inodes: Observation{Available: s.Ffree, Capacity: s.Files},
	}, nil
}

// fuller is the one of a and b with less available space for its size
// (a nil one is the other).
func fuller(a, b *fsStat) *fsStat {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if fraction(b.bytes) < fraction(a.bytes) {
		return b
	}
	return a
}

func fraction(o Observation) float64 {
	if o.Capacity == 0 {
		return 1
	}
	return float64(o.Available) / float64(o.Capacity)
}

// SameFilesystem reports whether a and b are on one filesystem.
func SameFilesystem(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(a, &sa) != nil || unix.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}
