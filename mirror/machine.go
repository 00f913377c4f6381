package mirror

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// host reads the machine's facts from the files kubelet (through cAdvisor)
// reads them from, under root.
type host struct {
	root string
	cpus int // 0: runtime.NumCPU()
}

func (h host) read(path string) string {
	b, err := os.ReadFile(filepath.Join(h.root, path))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// nodeInfo returns the facts of status.nodeInfo that the machine decides.
func (h host) nodeInfo() v1.NodeSystemInfo {
	return v1.NodeSystemInfo{
		MachineID:       h.read("etc/machine-id"),
		SystemUUID:      h.read("sys/class/dmi/id/product_uuid"),
		BootID:          h.read("proc/sys/kernel/random/boot_id"),
		KernelVersion:   h.read("proc/sys/kernel/osrelease"),
		OSImage:         h.osImage(),
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
	}
}

// osImage is PRETTY_NAME of os-release, as kubelet reports it, or "Linux".
func (h host) osImage() string {
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		b, err := os.ReadFile(filepath.Join(h.root, p))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PRETTY_NAME="); ok {
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				}
				return strings.Trim(v, `'`)
			}
		}
	}
	return "Linux"
}

// memory is MemTotal of /proc/meminfo in bytes, cAdvisor's memory capacity.
func (h host) memory() int64 {
	for line := range strings.Lines(h.read("proc/meminfo")) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// capacity is the Node's capacity: every CPU, all memory, the size of the
// filesystem holding dir and kubelet's 110 pods. podvisor reserves nothing
// and evicts nothing, so allocatable is the same.
func (h host) capacity(dir string) v1.ResourceList {
	cpus := h.cpus
	if cpus == 0 {
		cpus = runtime.NumCPU()
	}
	rl := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(cpus), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(h.memory(), resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil {
		rl[v1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(st.Blocks)*int64(st.Bsize), resource.BinarySI)
	}
	return rl
}
