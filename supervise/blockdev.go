package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// Raw block volumes (volumeDevices): a container gets the block device a
// Block claim is bound to at its devicePath, as kubelet passes a mapped
// device to the runtime and containerd's CRI adds it: the device node,
// and a device cgroup rule that allows it ("mrw", or "r" when the claim's
// volume source is readOnly, kubelet's permissions). The device's path is
// resolved and checked when each container is created, so a device that
// is missing or not a block device keeps the container waiting in
// CreateContainerError, and one that appears (a disk attached, a loop
// device set up) is used at the next try.

// BlockDevice is a host block device a container gets.
type BlockDevice struct {
	// HostPath is the device node on the host, symbolic links resolved.
	HostPath string
	// ContainerPath is the volumeDevice's devicePath.
	ContainerPath string
	// Permissions is the device cgroup access: "mrw", or "r" read-only.
	Permissions string
}

// claimDevice is a persistentVolumeClaim volume of volumeMode Block as the
// sandbox's preparation found it: its device's path as the
// PersistentVolume names it.
type claimDevice struct {
	Path     string
	ReadOnly bool
}

// blockDevices resolves container c's volumeDevices to the block devices
// of their claims. An error names the volume and the path.
func (w *podWorker) blockDevices(c *v1.Container) ([]BlockDevice, error) {
	var out []BlockDevice
	for _, d := range c.VolumeDevices {
		cd, ok := w.claimDevices[d.Name]
		if !ok {
			// kubelet's makeBlockVolumes.
			return nil, fmt.Errorf("cannot find volume %q to pass into container %q", d.Name, c.Name)
		}
		host, err := resolveBlockDevice(cd.Path)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", d.Name, err)
		}
		perm := "mrw"
		if cd.ReadOnly {
			perm = "r"
		}
		out = append(out, BlockDevice{HostPath: host, ContainerPath: d.DevicePath, Permissions: perm})
	}
	return out, nil
}

// resolveBlockDevice follows path's symbolic links (as containerd's CRI
// does with a device's host path) and checks that it ends at a block
// device.
func resolveBlockDevice(path string) (string, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("block device %s does not exist", path)
	}
	if err != nil {
		return "", fmt.Errorf("block device %s: %w", path, err)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", fmt.Errorf("block device %s: %w", path, err)
	}
	if m := fi.Mode(); m&fs.ModeDevice == 0 || m&fs.ModeCharDevice != 0 {
		what := "a " + m.Type().String() + " file"
		switch {
		case m.IsDir():
			what = "a directory"
		case m.IsRegular():
			what = "a regular file"
		case m&fs.ModeCharDevice != 0:
			what = "a character device"
		}
		if resolved != path {
			return "", fmt.Errorf("%s (%s) is not a block device: it is %s", path, resolved, what)
		}
		return "", fmt.Errorf("%s is not a block device: it is %s", path, what)
	}
	return resolved, nil
}
