package mounts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
)

// Paths inside the container.
const (
	etcHosts                  = "/etc/hosts"
	etcHostname               = "/etc/hostname"
	etcResolvConf             = "/etc/resolv.conf"
	defaultTerminationMessage = "/dev/termination-log"
)

// ContainerMounts returns the OCI mounts of container c of pod p (after
// Setup):
//   - its volumeMounts as bind mounts ("rbind", "ro" when readOnly and
//     always for configMap, secret, downwardAPI and projected volumes, the
//     mountPropagation as rprivate/rslave/rshared, bindMountOptions,
//     "rro" for recursiveReadOnly Enabled); a subPath is resolved inside
//     the volume (missing directories created, ".." and symlinks leading
//     out of the volume rejected), then opened again without following any
//     symlink and bind-mounted from that descriptor at
//     Dir/volume-subpaths/<volume>/<container>/<index>, which is the
//     source handed to runc: a container that swaps a directory of the
//     volume for a symlink meanwhile gets a refusal or the directory it
//     swapped out, never the link's target. A later call for the same
//     volumeMount (a restart) reuses or replaces that mount; Cleanup
//     removes them with the pod;
//   - /etc/hosts, /etc/hostname and /etc/resolv.conf from p.Dir, read-write
//     as kubelet mounts /etc/hosts, each skipped when the container mounts
//     that path itself; /etc/hostname and /etc/resolv.conf are read-only
//     for a readOnlyRootFilesystem container, as containerd mounts them;
//   - when terminationLog (a host path chosen by the caller, e.g.
//     Dir/containers/<container>/<restart>/termination-log) is not empty,
//     that file, created empty with mode 0666 if missing, at the
//     container's terminationMessagePath.
//
// Mounts are sorted so parents come before children (by depth of the
// cleaned destination, stable), as kubelet and containerd do.
func ContainerMounts(p Pod, c *v1.Container, terminationLog string) ([]specs.Mount, error) {
	if p.Spec == nil || c == nil {
		return nil, errors.New("container mounts: no pod or container")
	}
	volumes := make(map[string]*v1.Volume, len(p.Spec.Spec.Volumes))
	for i := range p.Spec.Spec.Volumes {
		v := &p.Spec.Spec.Volumes[i]
		volumes[v.Name] = v
	}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged

	var mounts []specs.Mount
	mounted := make(map[string]bool)
	for i, vm := range c.VolumeMounts {
		vols := volumes
		if v := volumes[vm.Name]; v != nil && v.Image != nil {
			iv, ivm, err := imageVolumeSource(p, v, vm)
			if err != nil {
				return nil, fmt.Errorf("container %s: volumeMount %q at %s: %w", c.Name, vm.Name, vm.MountPath, err)
			}
			vols, vm = map[string]*v1.Volume{vm.Name: iv}, ivm
		}
		if v := volumes[vm.Name]; v != nil && v.PersistentVolumeClaim != nil {
			cv, cvm, err := claimVolumeSource(p, v, vm)
			if err != nil {
				return nil, fmt.Errorf("container %s: volumeMount %q at %s: %w", c.Name, vm.Name, vm.MountPath, err)
			}
			vols, vm = map[string]*v1.Volume{vm.Name: cv}, cvm
		}
		m, err := volumeMount(p.Dir, vols, vm, privileged, stagingPath(p.Dir, vm.Name, c.Name, i))
		if err != nil {
			return nil, fmt.Errorf("container %s: volumeMount %q at %s: %w", c.Name, vm.Name, vm.MountPath, err)
		}
		mounted[m.Destination] = true
		mounts = append(mounts, m)
	}

	readOnlyRoot := c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem
	for _, f := range []struct {
		dst, file string
		ro        bool
	}{
		{etcHosts, hostsFile, false},
		{etcHostname, hostnameFile, readOnlyRoot},
		{etcResolvConf, resolvFile, readOnlyRoot},
	} {
		if mounted[f.dst] {
			continue
		}
		mounts = append(mounts, bindMount(filepath.Join(p.Dir, f.file), f.dst, f.ro))
	}

	if terminationLog != "" {
		if err := createTerminationLog(terminationLog); err != nil {
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		dst := c.TerminationMessagePath
		if dst == "" {
			dst = defaultTerminationMessage
		}
		mounts = append(mounts, bindMount(terminationLog, cleanDestination(dst), false))
	}

	sort.SliceStable(mounts, func(i, j int) bool {
		return depth(mounts[i].Destination) < depth(mounts[j].Destination)
	})
	return mounts, nil
}

// volumeMount is the mount of vm; a subPath is bind-mounted at staging
// first, and runc mounts staging.
func volumeMount(dir string, volumes map[string]*v1.Volume, vm v1.VolumeMount, privileged bool, staging string) (specs.Mount, error) {
	vol, ok := volumes[vm.Name]
	if !ok {
		return specs.Mount{}, errors.New("no volume of that name in the pod")
	}
	if vm.SubPathExpr != "" {
		return specs.Mount{}, errors.New("subPathExpr is not supported")
	}
	if vm.MountPath == "" {
		return specs.Mount{}, errors.New("empty mountPath")
	}
	var src string
	switch {
	case vol.EmptyDir != nil:
		src = emptyDirPath(dir, vol.Name)
	case vol.HostPath != nil:
		src = vol.HostPath.Path
	case isContentVolume(vol):
		// Always read-only, as kubelet mounts them: the files are
		// podvisor's to write.
		src = contentPath(dir, vol)
		vm.ReadOnly = true
	default:
		return specs.Mount{}, fmt.Errorf("%s volumes are not supported", volumeKind(vol))
	}
	propagation := "rprivate"
	if vm.MountPropagation != nil {
		switch *vm.MountPropagation {
		case v1.MountPropagationNone:
		case v1.MountPropagationHostToContainer:
			propagation = "rslave"
		case v1.MountPropagationBidirectional:
			if !privileged {
				return specs.Mount{}, errors.New("bidirectional mount propagation is available only to privileged containers")
			}
			propagation = "rshared"
		default:
			return specs.Mount{}, fmt.Errorf("invalid mountPropagation %q", *vm.MountPropagation)
		}
	}
	opts := []string{"rbind", propagation, rwOption(vm.ReadOnly)}
	if rro := vm.RecursiveReadOnly; rro != nil {
		switch *rro {
		case v1.RecursiveReadOnlyDisabled:
		case v1.RecursiveReadOnlyIfPossible:
			// podvisor does not probe runc and the kernel for rro support:
			// IfPossible is the plain, non-recursive read-only mount.
		case v1.RecursiveReadOnlyEnabled:
			if !vm.ReadOnly || propagation != "rprivate" {
				return specs.Mount{}, errors.New("recursiveReadOnly Enabled needs readOnly and mountPropagation None")
			}
			opts = append(opts, "rro")
		default:
			return specs.Mount{}, fmt.Errorf("invalid recursiveReadOnly %q", *rro)
		}
	}
	for _, o := range vm.BindMountOptions {
		switch v1.BindMountOption(o) {
		case v1.BindMountOptionNoExec, v1.BindMountOptionNoDev, v1.BindMountOptionNoSUID:
			opts = append(opts, o)
		default:
			return specs.Mount{}, fmt.Errorf("invalid bindMountOption %q", o)
		}
	}
	if vm.SubPath != "" {
		// Staged once every option is valid. A staging mount left by a
		// later failure is reused by the next try or goes with the pod.
		t, err := resolveSubPath(src, vm.SubPath)
		if err != nil {
			return specs.Mount{}, err
		}
		if err := stageSubPath(t, staging); err != nil {
			return specs.Mount{}, err
		}
		src = staging
	}
	return specs.Mount{
		Destination: cleanDestination(vm.MountPath),
		Type:        "bind",
		Source:      src,
		Options:     opts,
	}, nil
}

func bindMount(src, dst string, ro bool) specs.Mount {
	return specs.Mount{
		Destination: dst,
		Type:        "bind",
		Source:      src,
		Options:     []string{"rbind", "rprivate", rwOption(ro)},
	}
}

func rwOption(ro bool) string {
	if ro {
		return "ro"
	}
	return "rw"
}

// cleanDestination makes a container path absolute and clean; runc reads a
// relative destination as relative to the root anyway.
func cleanDestination(p string) string {
	return filepath.Join("/", p)
}

func depth(p string) int {
	p = filepath.Clean(p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

func createTerminationLog(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("termination log: %w", err)
	}
	// No O_TRUNC: computing the mounts again (adoption after a restart)
	// must not erase a message already written.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("termination log: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("termination log: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		return fmt.Errorf("termination log: %w", err)
	}
	return nil
}
