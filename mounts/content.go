package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	v1 "k8s.io/api/core/v1"
)

// Where the volumes whose files podvisor writes live under Pod.Dir, one
// directory per kind as kubelet's volumes/kubernetes.io~<kind>.
const (
	configMapDirs   = "volumes/configmap"
	secretDirs      = "volumes/secret"
	downwardAPIDirs = "volumes/downward-api"
	projectedDirs   = "volumes/projected"
)

// contentDirPerm is the mode of such a volume's root on disk, kubelet's
// (its wrapped emptyDir's); a tmpfs root keeps the tmpfs default, 1777.
const contentDirPerm fs.FileMode = 0o777

// isContentVolume reports whether podvisor writes the files of v: a
// configMap, secret, downwardAPI or projected volume.
func isContentVolume(v *v1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// memoryBacked reports whether v lives on a tmpfs, as kubelet's secret and
// projected volumes do (their files are never written to disk); configMap
// and downwardAPI volumes are on disk.
func memoryBacked(v *v1.Volume) bool {
	return v.Secret != nil || v.Projected != nil
}

func contentPath(dir string, v *v1.Volume) string {
	kind := configMapDirs
	switch {
	case v.Secret != nil:
		kind = secretDirs
	case v.DownwardAPI != nil:
		kind = downwardAPIDirs
	case v.Projected != nil:
		kind = projectedDirs
	}
	return filepath.Join(dir, kind, v.Name)
}

// setupContentDir makes a content volume's root, a tmpfs mounted there when
// memory backs it. Run again it keeps what is there, modes included (an
// fsGroup's setgid bit stays).
func setupContentDir(path string, memory bool) error {
	_, statErr := os.Stat(path)
	if err := os.MkdirAll(path, contentDirPerm); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	if memory {
		return mountTmpfs(path, 0, 0)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// Created now: undo the umask.
		if err := os.Chmod(path, contentDirPerm); err != nil {
			return fmt.Errorf("chmod volume directory: %w", err)
		}
	}
	return nil
}

// HasFiles reports whether the configMap, secret, downwardAPI or projected
// volume v of the pod whose directory is dir holds a version of its files
// (a podvisor restarted finds them there).
func HasFiles(dir string, v *v1.Volume) bool {
	_, err := os.Readlink(filepath.Join(contentPath(dir, v), dataDirName))
	return err == nil
}

// WriteVolume makes the configMap, secret, downwardAPI or projected volume
// v of pod p (after Setup) hold exactly files, with kubelet's atomic
// writer (see writeAtomic): readers see the old version or the new one,
// never a mix. It reports whether anything was written: nothing is when
// the files already hold that content. With the pod's fsGroup, the whole
// volume is given to that group, readable by it, before the new version
// becomes visible (kubelet walks these volumes at every write, whatever
// fsGroupChangePolicy says). A secret or projected volume is written only
// onto its tmpfs: if none is mounted there, nothing is written.
func WriteVolume(p Pod, v *v1.Volume, files Files) (bool, error) {
	if p.Spec == nil || !isContentVolume(v) {
		return false, errors.New("write volume: not a configMap, secret, downwardAPI or projected volume")
	}
	path := contentPath(p.Dir, v)
	if _, err := os.Stat(path); err != nil {
		return false, fmt.Errorf("write volume: %w", err)
	}
	if memoryBacked(v) {
		mounted, err := mountinfo.Mounted(path)
		if err != nil {
			return false, fmt.Errorf("write volume: %w", err)
		}
		if !mounted {
			return false, fmt.Errorf("write volume: no tmpfs is mounted at %s; its files are never written to disk", path)
		}
	}
	fsGroup, _ := podFSGroup(p.Spec.Spec.SecurityContext)
	var setPerms func() error
	if fsGroup != nil {
		setPerms = func() error { return setOwnership(path, fsGroup, nil, true) }
	}
	return writeAtomic(path, files, setPerms)
}
