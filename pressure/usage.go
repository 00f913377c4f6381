package pressure

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Usage reads pods' use: memory from their cgroups (through Memory), disk
// by walking their emptyDirs and logs.
type Usage struct {
	// EmptyDir is the directory of a pod's emptyDir volume.
	EmptyDir func(uid types.UID, volume string) string
	// Logs is the directory of a container's logs.
	Logs func(pod *v1.Pod, container string) string
	// Memory returns the working set of each running container, by pod
	// UID and container name; a pod missing has no stats.
	Memory func() map[types.UID]map[string]uint64
	// Rootfs, when set, returns the writable layer use of each running
	// container of a pod, by name.
	Rootfs func(ctx context.Context, pod *v1.Pod) map[string]uint64
	// Pids, when set, returns the number of tasks in a pod's cgroup.
	Pids func(uid types.UID) uint64
}

var _ UsageSource = Usage{}

// Usage returns the use of pods; their disks are walked only when disk.
func (u Usage) Usage(ctx context.Context, pods []v1.Pod, disk bool) []PodUsage {
	var mem map[types.UID]map[string]uint64
	if u.Memory != nil {
		mem = u.Memory()
	}
	out := make([]PodUsage, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		pu := PodUsage{Pod: p, Containers: map[string]ContainerUsage{}}
		cm, ok := mem[p.UID]
		pu.Known = ok || u.Memory == nil
		for name, ws := range cm {
			pu.Containers[name] = ContainerUsage{Memory: ws}
		}
		if u.Pids != nil {
			pu.Pids = u.Pids(p.UID)
		}
		if disk {
			u.disk(ctx, &pu)
		}
		out = append(out, pu)
	}
	return out
}

// disk adds the pod's emptyDirs, logs and writable layers to pu.
func (u Usage) disk(ctx context.Context, pu *PodUsage) {
	p := pu.Pod
	pu.Volumes = map[string]uint64{}
	for _, vol := range p.Spec.Volumes {
		if vol.EmptyDir == nil || vol.EmptyDir.Medium == v1.StorageMediumMemory || u.EmptyDir == nil {
			continue
		}
		b, n := du(u.EmptyDir(p.UID, vol.Name))
		pu.Volumes[vol.Name] = b
		pu.Inodes += n
	}
	var rootfs map[string]uint64
	if u.Rootfs != nil {
		rootfs = u.Rootfs(ctx, p)
	}
	for _, c := range p.Spec.Containers {
		cu := pu.Containers[c.Name]
		if u.Logs != nil {
			b, n := du(u.Logs(p, c.Name))
			cu.Logs = b
			pu.Inodes += n
		}
		cu.Rootfs = rootfs[c.Name]
		pu.Containers[c.Name] = cu
	}
}

// du is the disk space (allocated blocks) and inodes of the files under
// dir, on dir's filesystem only; a missing dir is 0.
func du(dir string) (bytes, inodes uint64) {
	st, err := os.Lstat(dir)
	if err != nil {
		return 0, 0
	}
	dev := st.Sys().(*syscall.Stat_t).Dev
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		s, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if s.Dev != dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		bytes += uint64(s.Blocks) * 512
		inodes++
		return nil
	})
	return bytes, inodes
}
