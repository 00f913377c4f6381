package podfile

import (
	"fmt"
	"path"

	v1 "k8s.io/api/core/v1"
)

// Raw block volumes. A PersistentVolumeClaim of volumeMode Block binds
// only to a PersistentVolume document of volumeMode Block, whose
// local.path (or hostPath.path, of type BlockDevice or none) names a block
// device of this machine; podvisor provisions no block devices, so a Block
// claim no such document matches stays unbound and its pods wait. A
// container gets the device through volumeDevices, at devicePath; a Block
// claim in volumeMounts, or a Filesystem one in volumeDevices, keeps the
// pod waiting with kubelet's error (VolumeModeMismatch).

// noBlockVolume is the binder's detail for a Block claim left unbound.
const noBlockVolume = "no PersistentVolume document of volumeMode Block matches it, and podvisor provisions directories only (volumeMode Filesystem)"

// isBlock says whether volume mode m is Block (unset is Filesystem).
func isBlock(m *v1.PersistentVolumeMode) bool {
	return m != nil && *m == v1.PersistentVolumeBlock
}

// validateBlockVolume refuses a hostPath PersistentVolume of volumeMode
// Block whose type says its path is anything but a block device.
func validateBlockVolume(pv *v1.PersistentVolume, p *problems) {
	if !isBlock(pv.Spec.VolumeMode) {
		return
	}
	if h := pv.Spec.HostPath; h != nil && h.Type != nil && *h.Type != v1.HostPathUnset && *h.Type != v1.HostPathBlockDev {
		p.invalidf("spec.hostPath.type", "Unsupported value: %q: a PersistentVolume of volumeMode Block is a block device: supported values: \"\", %q", *h.Type, v1.HostPathBlockDev)
	}
}

// validateVolumeDevices checks what Kubernetes' validation leaves to
// kubelet or compares only as strings: a devicePath is an absolute path
// (kubelet refuses the container otherwise), unique among the
// container's devices and not one of its mount paths once cleaned ("/x"
// and "/x/" are one path). Kubernetes checks the rest: the name is a
// persistentVolumeClaim volume of the pod, not also in volumeMounts.
func validateVolumeDevices(cp string, c *v1.Container, p *problems) {
	if len(c.VolumeDevices) == 0 {
		return
	}
	mountsRaw, mountsClean := map[string]bool{}, map[string]bool{}
	for _, m := range c.VolumeMounts {
		mountsRaw[m.MountPath] = true
		if path.IsAbs(m.MountPath) {
			mountsClean[path.Clean(m.MountPath)] = true
		}
	}
	written, cleaned := map[string]bool{}, map[string]bool{}
	for i, d := range c.VolumeDevices {
		if d.DevicePath == "" {
			continue // Kubernetes: Required value
		}
		dp := fmt.Sprintf("%s.volumeDevices[%d].devicePath", cp, i)
		if !path.IsAbs(d.DevicePath) {
			p.invalidf(dp, "must be an absolute path, got %q", d.DevicePath)
			continue
		}
		clean := path.Clean(d.DevicePath)
		switch {
		case cleaned[clean] && !written[d.DevicePath]:
			p.invalidf(dp, "must be unique, %q is given twice", clean)
		case mountsClean[clean] && !mountsRaw[d.DevicePath]:
			p.invalidf(dp, "must not be a mount path of the container, %q is in volumeMounts", clean)
		}
		written[d.DevicePath], cleaned[clean] = true, true
	}
}

// volumeUses says whether any container of pod mounts volume (mounted)
// or gets it as a device (mapped).
func volumeUses(pod *v1.Pod, volume string) (mounted, mapped bool) {
	check := func(ms []v1.VolumeMount, ds []v1.VolumeDevice) {
		for _, m := range ms {
			mounted = mounted || m.Name == volume
		}
		for _, d := range ds {
			mapped = mapped || d.Name == volume
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			check(cs[i].VolumeMounts, cs[i].VolumeDevices)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		check(pod.Spec.EphemeralContainers[i].VolumeMounts, pod.Spec.EphemeralContainers[i].VolumeDevices)
	}
	return mounted, mapped
}

// VolumeModeMismatch is kubelet's error for pod volume, of a claim bound
// as b, used as its volume mode does not allow: a Block claim in a
// container's volumeMounts, a Filesystem one (a provisioned directory
// among them) in volumeDevices. It is "" when the use fits, or the claim
// is not bound.
func VolumeModeMismatch(pod *v1.Pod, volume string, b ClaimBinding) string {
	if b.Unbound != "" {
		return ""
	}
	mounted, mapped := volumeUses(pod, volume)
	switch {
	case mounted && b.Block:
		return fmt.Sprintf("volume %s has volumeMode %s, but is specified in volumeMounts", volume, v1.PersistentVolumeBlock)
	case mapped && !b.Block:
		return fmt.Sprintf("volume %s has volumeMode %s, but is specified in volumeDevices", volume, v1.PersistentVolumeFilesystem)
	}
	return ""
}
