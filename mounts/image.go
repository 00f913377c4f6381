package mounts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// imageVolumes is where a pod's image volumes are mounted under Pod.Dir.
const imageVolumes = "volumes/image"

// ImageVolumeDir is where the image of digest is mounted for the pod whose
// directory is dir: one mount per pod and image, shared by the pod's
// containers that mount a volume of it, as containerd's CRI keeps one per
// sandbox and image. Cleanup unmounts it with the pod.
func ImageVolumeDir(dir, digest string) string {
	if _, hex, ok := strings.Cut(digest, ":"); ok {
		digest = hex
	}
	return filepath.Join(dir, imageVolumes, digest)
}

// ImageSubPath resolves subPath inside the image mounted at root, as
// containerd's CRI does for an image volume's subPath: it must exist (an
// image is read-only, nothing is created), stay inside the image ("..",
// absolute paths and symlinks leading out refused) and be a directory
// (mounting a single file of an image is not part of image volumes). It
// returns the host path to bind-mount. Nothing can change an image's
// files, so the path resolved stays what was checked.
func ImageSubPath(root, subPath string) (string, error) {
	t, err := resolveSubPath(root, subPath)
	if err != nil {
		return "", err
	}
	if len(t.create) > 0 {
		return "", fmt.Errorf("subPath %q: %s: no such file or directory in the image", subPath, filepath.Join(t.existing, t.create[0]))
	}
	p := t.path()
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", subPath, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("subPath %q is not a directory: only a directory of an image can be mounted", subPath)
	}
	return p, nil
}

// imageVolumeSource is image volume v as the volume runc bind-mounts for
// vm: the directory its image is mounted at (p.ImageVolumes), or the
// subPath's directory in it, always read-only, as kubelet's image volume
// plugin is (its other options, propagation and recursiveReadOnly, apply
// as to any volume).
func imageVolumeSource(p Pod, v *v1.Volume, vm v1.VolumeMount) (*v1.Volume, v1.VolumeMount, error) {
	dir := p.ImageVolumes[v.Name]
	if dir == "" {
		return nil, vm, fmt.Errorf("image volume %q is not mounted", v.Name)
	}
	if vm.SubPath != "" {
		sub, err := ImageSubPath(dir, vm.SubPath)
		if err != nil {
			return nil, vm, err
		}
		dir, vm.SubPath = sub, ""
	}
	vm.ReadOnly = true
	return &v1.Volume{Name: v.Name, VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}}}, vm, nil
}
