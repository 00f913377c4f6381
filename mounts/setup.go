package mounts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	v1 "k8s.io/api/core/v1"
)

// Default host files read by Setup.
const (
	DefaultHostResolvConf = "/etc/resolv.conf"
	DefaultHostHosts      = "/etc/hosts"
)

// Pod describes what mounts needs to know of one pod sandbox.
type Pod struct {
	// Spec is the defaulted pod (spec.volumes, hostAliases, dnsPolicy,
	// dnsConfig, hostNetwork, hostname).
	Spec *v1.Pod
	// Dir is the per-pod directory owned by podvisor, e.g.
	// <state-dir>/pods/<uid>/files; Setup creates it 0700.
	Dir string
	// Hostname is the pod's hostname, already computed by the caller.
	Hostname string
	// HostDomain, when set, is the pod's domain, kubelet's
	// <subdomain>.<namespace>.svc.<cluster domain>: /etc/hosts names
	// each pod IP <Hostname>.<HostDomain> and <Hostname>, as kubelet's,
	// and with setHostnameAsFQDN /etc/hostname holds that FQDN.
	HostDomain string
	// PodIPs may be empty (hostNetwork, or before the network is set up).
	PodIPs []string
	// HostResolvConf is the host's resolv.conf (DefaultHostResolvConf if
	// empty).
	HostResolvConf string
	// HostHosts is the host's hosts file (DefaultHostHosts if empty).
	HostHosts string
	// Log receives Setup's warnings (DNS limits, dropped nameservers, missing
	// host files). Optional.
	Log *slog.Logger
	// ImageVolumes are the directories the pod's image volumes are
	// mounted at (ImageVolumeDir), by volume name, for ContainerMounts:
	// the runtime mounts images, Setup leaves image volumes to it.
	ImageVolumes map[string]string
	// Claims are the persistentVolumeClaim volumes' directories, by
	// volume name, for ContainerMounts: the caller binds and prepares
	// them (PrepareClaim), Setup leaves them alone.
	Claims map[string]ClaimMount
}

// File names under Pod.Dir.
const (
	hostsFile    = "etc-hosts"
	hostnameFile = "etc-hostname"
	resolvFile   = "resolv.conf"
	emptyDirs    = "volumes/empty-dir"
	// emptyDirsReady holds the emptyDir volumes' ready markers.
	emptyDirsReady = "volumes/empty-dir-ready"
)

// emptyDirPerm is kubelet's mode for emptyDir volumes: any container user
// may write there.
const emptyDirPerm fs.FileMode = 0o777

// Setup prepares the pod's files and volumes under p.Dir: etc-hosts,
// etc-hostname and resolv.conf; emptyDir volumes under
// Dir/volumes/empty-dir/<name> (medium Memory: a tmpfs mounted there,
// sizeLimit as its size), the pod's fsGroup given to their roots once,
// when new (see setupEmptyDir); hostPath volumes checked by type as kubelet does
// (DirectoryOrCreate creates the directory 0755 with its parents,
// FileOrCreate creates the file 0644 and its parent directory,
// Directory/File/Socket/CharDevice/BlockDevice must exist with that type, no
// type means no check).
//
// Setup is idempotent: run again, after a podvisor restart or when PodIPs
// become known, it rewrites the files that changed (in place, so running
// containers see them) and leaves emptyDir volumes alone: their contents,
// their roots' modes and their mounted tmpfs.
// Errors name the volume and the reason, like kubelet's FailedMount
// ("volume \"data\": hostPath type check failed: /x is not a directory");
// every failing volume is reported.
func Setup(p Pod) error {
	if p.Spec == nil {
		return errors.New("setup pod: no spec")
	}
	if !filepath.IsAbs(p.Dir) {
		return fmt.Errorf("setup pod: dir %q is not absolute", p.Dir)
	}
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Root's only (missing parents too): containers reach these files
	// through the bind mounts runc makes as root, and no host user needs
	// to. Chmod undoes the umask and tightens a Dir made by an older
	// podvisor.
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return fmt.Errorf("setup pod: %w", err)
	}
	if err := os.Chmod(p.Dir, 0o700); err != nil {
		return fmt.Errorf("setup pod: %w", err)
	}
	if err := writeFiles(p, log); err != nil {
		return fmt.Errorf("setup pod: %w", err)
	}
	var errs []error
	for i := range p.Spec.Spec.Volumes {
		v := &p.Spec.Spec.Volumes[i]
		if err := setupVolume(p.Dir, v, p.Spec.Spec.SecurityContext); err != nil {
			errs = append(errs, fmt.Errorf("volume %q: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

func writeFiles(p Pod, log *slog.Logger) error {
	spec := &p.Spec.Spec

	var hostHosts []byte
	if spec.HostNetwork {
		path := orDefaultPath(p.HostHosts, DefaultHostHosts)
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			log.Warn("host hosts file not found; pod hosts file has no host entries", "path", path)
		case err != nil:
			return fmt.Errorf("read host hosts file: %w", err)
		}
		hostHosts = b
	}
	hosts := HostsFile(hostsNames(p.Hostname, p.HostDomain), p.PodIPs, spec.HostAliases, spec.HostNetwork, hostHosts)

	path := orDefaultPath(p.HostResolvConf, DefaultHostResolvConf)
	hostResolv, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if spec.DNSPolicy != v1.DNSNone {
			log.Warn("host resolv.conf not found", "path", path)
		}
	case err != nil:
		return fmt.Errorf("read host resolv.conf: %w", err)
	}
	resolv, warnings, err := ResolvConf(p.Spec, hostResolv)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		log.Warn("pod dns config", "warning", w)
	}

	for _, f := range []struct {
		name    string
		content []byte
	}{
		{hostsFile, hosts},
		{hostnameFile, []byte(hostnameContent(p) + "\n")},
		{resolvFile, resolv},
	} {
		if err := writeInPlace(filepath.Join(p.Dir, f.name), f.content); err != nil {
			return err
		}
	}
	return nil
}

// writeInPlace writes content into path unless it already holds it. The
// file is truncated and rewritten rather than replaced: a bind mount pins
// the inode, so a renamed-over file would never reach running containers.
func writeInPlace(path string, content []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return os.Chmod(path, 0o644)
}

func setupVolume(dir string, v *v1.Volume, psc *v1.PodSecurityContext) error {
	switch {
	case v.EmptyDir != nil:
		fsGroup, _ := podFSGroup(psc)
		return setupEmptyDir(dir, v.Name, v.EmptyDir, fsGroup)
	case v.HostPath != nil:
		return checkHostPath(v.HostPath)
	case v.PersistentVolumeClaim != nil:
		return nil // PrepareClaim's
	case isContentVolume(v):
		return setupContentDir(contentPath(dir, v), memoryBacked(v))
	case v.Image != nil:
		return nil // mounted by the runtime before a container that mounts it starts
	default:
		return fmt.Errorf("%s volumes are not supported", volumeKind(v))
	}
}

// podFSGroup returns the pod's fsGroup and fsGroupChangePolicy.
func podFSGroup(psc *v1.PodSecurityContext) (*int64, *v1.PodFSGroupChangePolicy) {
	if psc == nil {
		return nil, nil
	}
	return psc.FSGroup, psc.FSGroupChangePolicy
}

func emptyDirPath(dir, name string) string {
	return filepath.Join(dir, emptyDirs, name)
}

// setupEmptyDir makes the emptyDir volume name of the pod whose directory
// is dir, as kubelet's emptyDir plugin: created 0777 (a tmpfs mounted there
// for medium Memory, sizeLimit its size), then, while it is still empty,
// its root given to the pod's fsGroup (its group, the group's read-write
// and search bits and setgid); then a ready marker is written beside it.
// With the marker there (and the directory, or for medium Memory the
// tmpfs), Setup run again changes nothing: a volume its containers write
// is never walked, nor its root changed again (kubelet's fsGroupChangePolicy
// does not apply to emptyDir either). A directory without its marker (left
// by an older podvisor, or a crash before the marker) only has its root
// set again.
func setupEmptyDir(dir, name string, ed *v1.EmptyDirVolumeSource, fsGroup *int64) error {
	switch {
	case ed.Medium == v1.StorageMediumDefault, ed.Medium == v1.StorageMediumMemory:
	case strings.HasPrefix(string(ed.Medium), string(v1.StorageMediumHugePages)):
		return fmt.Errorf("emptyDir medium %s is not supported", ed.Medium)
	default:
		return fmt.Errorf("unknown emptyDir medium %q", ed.Medium)
	}
	path := emptyDirPath(dir, name)
	marker := emptyDirReadyPath(dir, name)
	memory := ed.Medium == v1.StorageMediumMemory
	ready, err := emptyDirReady(path, marker, memory)
	if err != nil {
		return err
	}
	if ready {
		return nil
	}
	if err := os.MkdirAll(path, emptyDirPerm); err != nil {
		return fmt.Errorf("create emptyDir: %w", err)
	}
	if memory {
		var size int64
		if ed.SizeLimit != nil {
			size = ed.SizeLimit.Value()
		}
		if err := mountTmpfs(path, size, emptyDirPerm); err != nil {
			return err
		}
	}
	// After the mount: the root that matters is the tmpfs's. This also
	// undoes the umask.
	if err := setRootOwnership(path, fsGroup); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		return fmt.Errorf("mark emptyDir ready: %w", err)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return fmt.Errorf("mark emptyDir ready: %w", err)
	}
	return nil
}

// emptyDirReadyPath is the ready marker of emptyDir volume name, kept
// beside the volumes in the pod's directory (kubelet keeps its own in the
// pod's plugins directory): inside the volume its containers could remove
// or forge it. Volume names are DNS labels, safe as file names.
func emptyDirReadyPath(dir, name string) string {
	return filepath.Join(dir, emptyDirsReady, name)
}

// emptyDirReady reports whether the emptyDir at path was set up: its marker
// is there and so is the directory, for medium Memory with its tmpfs
// mounted (a reboot took the tmpfs, and its content, away).
func emptyDirReady(path, marker string, memory bool) (bool, error) {
	if _, err := os.Lstat(marker); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("emptyDir ready marker: %w", err)
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("emptyDir: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("emptyDir: %s is not a directory", path)
	}
	if !memory {
		return true, nil
	}
	mounted, err := mountinfo.Mounted(path)
	if err != nil {
		return false, fmt.Errorf("emptyDir: %w", err)
	}
	return mounted, nil
}

// checkHostPath applies kubelet's hostPath type check.
func checkHostPath(hp *v1.HostPathVolumeSource) error {
	path := hp.Path
	if !filepath.IsAbs(path) {
		return fmt.Errorf("hostPath %q is not absolute", path)
	}
	typ := v1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	fi, statErr := os.Stat(path)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return fmt.Errorf("hostPath type check failed: %w", statErr)
	}
	mode := fs.FileMode(0)
	if exists {
		mode = fi.Mode()
	}
	fail := func(what string) error {
		return fmt.Errorf("hostPath type check failed: %s is not %s", path, what)
	}
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("hostPath create directory: %w", err)
			}
			return nil
		}
		fallthrough
	case v1.HostPathDirectory:
		if !mode.IsDir() {
			return fail("a directory")
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fmt.Errorf("hostPath create parent directory: %w", err)
			}
			f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
			if err != nil {
				return fmt.Errorf("hostPath create file: %w", err)
			}
			return f.Close()
		}
		fallthrough
	case v1.HostPathFile:
		if !mode.IsRegular() {
			return fail("a file")
		}
	case v1.HostPathSocket:
		if mode.Type() != fs.ModeSocket {
			return fail("a socket file")
		}
	case v1.HostPathCharDev:
		if mode.Type() != fs.ModeDevice|fs.ModeCharDevice {
			return fail("a character device")
		}
	case v1.HostPathBlockDev:
		if mode.Type() != fs.ModeDevice {
			return fail("a block device")
		}
	default:
		return fmt.Errorf("invalid hostPath type %q", typ)
	}
	return nil
}

// volumeKind names the source of a volume the way manifests spell it
// ("configMap", "nfs"), for error messages.
func volumeKind(v *v1.Volume) string {
	b, err := json.Marshal(v.VolumeSource)
	if err != nil {
		return "this kind of"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || len(m) == 0 {
		return "source-less"
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, "+")
}

func orDefaultPath(p, def string) string {
	if p == "" {
		return def
	}
	return p
}
