package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/podvisor/podvisor/cni"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/internal/nsfs"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// shmSize is the size of a pod's /dev/shm, as containerd's CRI default.
const shmSize = 64 << 20

func newID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// podHostname is the pod's hostname as kubelet computes it
// (GeneratePodHostNameAndDomain): spec.hostnameOverride, else spec.hostname
// or the pod name, cut to 63 characters without a trailing '-' or '.'.
func podHostname(pod *v1.Pod) string {
	if pod.Spec.HostNetwork {
		// The node's, as the CRI writes it for a pod in the host's UTS
		// namespace.
		if h, err := os.Hostname(); err == nil {
			return h
		}
	}
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if o := pod.Spec.HostnameOverride; o != nil {
		h = *o // before spec.hostname, validated as a DNS subdomain
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func podRef(pod *v1.Pod) cni.PodRef {
	return cni.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

// podPorts lists the hostPort mappings of a pod for CNI's portmap plugin.
func podPorts(pod *v1.Pod) []cni.PortMapping {
	var out []cni.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			out = append(out, cni.PortMapping{
				HostPort:      p.HostPort,
				ContainerPort: p.ContainerPort,
				Protocol:      strings.ToLower(string(p.Protocol)),
				HostIP:        p.HostIP,
			})
		}
	}
	return out
}

// hostSandboxes keeps sandboxes as namespace files bind-mounted under
// the run dir: no pause process or image.
type hostSandboxes struct{ layout layout.Layout }

var _ Sandboxes = hostSandboxes{}

// Create makes the pod's namespaces and /dev/shm. The network is attached
// separately (CNI ADD) so a failed ADD is retried without recreating the
// namespaces.
//
// The sandbox directory, and the run dir's pods directory when Create
// makes it, are 0700: the namespace files and the /dev/shm tmpfs (1777
// inside, as the CRI makes it) are reached by runc and CNI plugins as
// root, and by no other host user.
func (h hostSandboxes) Create(pod *v1.Pod) (*Sandbox, error) {
	sb := &Sandbox{ID: newID(), BootID: bootID()}
	dir := h.layout.SandboxDir(sb.ID)
	if !pod.Spec.HostNetwork || !pod.Spec.HostIPC {
		if err := os.MkdirAll(h.layout.Sandboxes(), 0o700); err != nil {
			return sb, fmt.Errorf("create sandbox dir: %w", err)
		}
		// Mkdir, not MkdirAll: a new ID is a new directory, and the mode
		// (only narrowed by the umask) holds from its first moment.
		if err := os.Mkdir(dir, 0o700); err != nil {
			return sb, fmt.Errorf("create sandbox dir: %w", err)
		}
	}
	if !pod.Spec.HostNetwork {
		sb.NetNS = filepath.Join(dir, "net")
		if err := cni.NewNetNS(sb.NetNS); err != nil {
			return sb, fmt.Errorf("create network namespace: %w", err)
		}
	}
	if !pod.Spec.HostIPC {
		sb.IPCNS = filepath.Join(dir, "ipc")
		if err := nsfs.New(sb.IPCNS, unix.CLONE_NEWIPC); err != nil {
			return sb, fmt.Errorf("create ipc namespace: %w", err)
		}
		var err error
		if sb.Shm, err = mountShm(dir); err != nil {
			return sb, err
		}
	}
	return sb, nil
}

// mountShm makes the pod's /dev/shm, a tmpfs of shmSize at dir/shm, as
// the CRI's: it starts empty and is 1777 (never idmapped).
func mountShm(dir string) (string, error) {
	shm := filepath.Join(dir, "shm")
	if err := os.Mkdir(shm, 0o700); err != nil {
		return shm, fmt.Errorf("create /dev/shm dir: %w", err)
	}
	if err := unix.Mount("shm", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, fmt.Sprintf("mode=1777,size=%d", shmSize)); err != nil {
		return shm, fmt.Errorf("mount /dev/shm tmpfs: %w", err)
	}
	return shm, nil
}

// Alive reports whether the sandbox's namespaces and /dev/shm still exist.
func (hostSandboxes) Alive(sb *Sandbox) bool { return sandboxAlive(sb) }

// NetNS is the sandbox's network namespace while it is one.
func (hostSandboxes) NetNS(sb *Sandbox) string {
	if cni.IsNetNS(sb.NetNS) {
		return sb.NetNS
	}
	return ""
}

// Find rebuilds the record of a sandbox from its directory (its network
// was attached; its IPs are not known any more).
func (h hostSandboxes) Find(id string) *Sandbox {
	dir := h.layout.SandboxDir(id)
	sb := &Sandbox{ID: id, Network: true}
	if p := filepath.Join(dir, "net"); cni.IsNetNS(p) {
		sb.NetNS = p
	}
	if p := filepath.Join(dir, "ipc"); nsfs.Is(p) {
		sb.IPCNS = p
	}
	if p := filepath.Join(dir, "shm"); isMountPoint(p) {
		sb.Shm = p
	}
	if p := userNSPath(dir); nsfs.Is(p) {
		sb.UserNS = p
	}
	if p := pidNSPath(dir); nsfs.Is(p) {
		sb.PIDNS = p
	}
	return sb
}

// Remove removes the namespaces, /dev/shm and the sandbox's directory:
// those the record names, and those under the run dir for its ID (for
// sandboxes no record names, and a run dir that moved).
func (h hostSandboxes) Remove(sb *Sandbox) error {
	var errs []error
	dirs := []string{h.layout.SandboxDir(sb.ID)}
	for _, p := range []string{sb.NetNS, sb.IPCNS, sb.Shm, sb.UserNS, sb.PIDNS} {
		if p != "" && filepath.Dir(p) != dirs[0] {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	for _, dir := range dirs {
		if err := cni.RemoveNetNS(filepath.Join(dir, "net")); err != nil {
			errs = append(errs, err)
		}
		if err := nsfs.Remove(filepath.Join(dir, "ipc")); err != nil {
			errs = append(errs, err)
		}
		if err := nsfs.Remove(userNSPath(dir)); err != nil {
			errs = append(errs, err)
		}
		if err := nsfs.Remove(pidNSPath(dir)); err != nil {
			errs = append(errs, err)
		}
		shm := filepath.Join(dir, "shm")
		if err := unix.Unmount(shm, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount /dev/shm: %w", err))
		}
		if isMountPoint(shm) {
			errs = append(errs, fmt.Errorf("/dev/shm of sandbox %s is still mounted", sb.ID))
		} else if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// sandboxAlive reports whether the sandbox's namespaces and /dev/shm still
// exist; after a reboot (or a cleared run dir) they do not. Only a definite
// answer counts: a stat that fails for another reason than a missing file
// is no proof of loss, and losing the sandbox kills every container.
func sandboxAlive(sb *Sandbox) bool {
	if sb.NetNS != "" && nsGone(sb.NetNS) {
		return false
	}
	if sb.IPCNS != "" && nsGone(sb.IPCNS) {
		return false
	}
	if sb.UserNS != "" && nsGone(sb.UserNS) {
		return false
	}
	if sb.PIDNS != "" && nsGone(sb.PIDNS) {
		return false
	}
	if sb.Shm != "" && mountGone(sb.Shm) {
		return false
	}
	return sb.BootID == "" || sb.BootID == bootID()
}

// nsGone: the path is missing or is not a namespace file.
func nsGone(p string) bool {
	var st unix.Statfs_t
	err := unix.Statfs(p, &st)
	if errors.Is(err, unix.ENOENT) {
		return true
	}
	return err == nil && st.Type != unix.NSFS_MAGIC
}

// mountGone: the path is missing or nothing is mounted on it.
func mountGone(p string) bool {
	mounted, known := mountState(p)
	return known && !mounted
}

func isMountPoint(p string) bool {
	mounted, known := mountState(p)
	return known && mounted
}

// mountState tells whether something is mounted on p (its device differs
// from its parent's); known is false when that cannot be told (a stat
// failed for another reason than p missing).
func mountState(p string) (mounted, known bool) {
	var st, parent unix.Stat_t
	err := unix.Stat(p, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, true
	}
	if err != nil || unix.Stat(filepath.Dir(p), &parent) != nil {
		return false, false
	}
	return st.Dev != parent.Dev, true
}

// bootID identifies this boot of the host: a sandbox made in another boot
// is gone even when it has no namespace files to miss (hostNetwork and
// hostIPC pods). Read once: the boot does not change under a process, and
// every relist asks.
var bootID = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
})
