package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/podvisor/podvisor/internal/nsfs"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// newPodNamespaces makes a pod's user namespace, mapping IDs 0..m.Size-1 to
// m.HostID.., and the pod's network and IPC namespaces owned by it, and
// bind-mounts the three at userPath, netPath and ipcPath. The CRI makes the
// pause container in the user namespace for the same ownership: root in
// the pod then administers its own network (sysctls, interfaces) and
// nothing else.
//
// A multi-threaded process cannot unshare a user namespace, so a child is
// cloned into all three (the kernel makes the network and IPC namespaces
// of a clone that also makes a user namespace owned by it). The child is
// traced, so it stops at its exec before running anything; once the
// namespaces are bound it is killed. No process stays behind.
func newPodNamespaces(m idMapping, userPath, netPath, ipcPath string) error {
	for _, p := range []string{userPath, netPath, ipcPath} {
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return fmt.Errorf("create namespace file %s: %w", p, err)
		}
		f.Close()
	}
	errc := make(chan error, 1)
	go func() {
		// ptrace ties the child to this thread, which exits with the
		// goroutine (it is never unlocked): no other goroutine runs on a
		// thread that traced.
		runtime.LockOSThread()
		errc <- bindNamespaces(m, map[string]string{"user": userPath, "net": netPath, "ipc": ipcPath})
	}()
	return <-errc
}

func bindNamespaces(m idMapping, paths map[string]string) error {
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(m.HostID), Size: int(m.Size)}}
	proc, err := os.StartProcess("/proc/self/exe", []string{"podvisor-userns"}, &os.ProcAttr{
		Sys: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNET | unix.CLONE_NEWIPC,
			UidMappings: ids,
			GidMappings: ids,
			// Containers set their supplementary groups: setgroups must
			// stay allowed in the namespace.
			GidMappingsEnableSetgroups: true,
			Ptrace:                     true,
			Pdeathsig:                  unix.SIGKILL,
		},
	})
	if err != nil {
		return fmt.Errorf("create user namespace: %w", err)
	}
	defer func() {
		proc.Kill()
		proc.Wait()
	}()
	var errs []error
	for _, kind := range []string{"user", "net", "ipc"} {
		src := fmt.Sprintf("/proc/%d/ns/%s", proc.Pid, kind)
		if err := unix.Mount(src, paths[kind], "none", unix.MS_BIND, ""); err != nil {
			errs = append(errs, fmt.Errorf("bind %s namespace to %s: %w", kind, paths[kind], err))
		}
	}
	return errors.Join(errs...)
}

// userNSPath is the user namespace file of a sandbox dir.
func userNSPath(dir string) string { return filepath.Join(dir, "user") }

// CreateInUserNS makes a sandbox as Create does, its network and IPC
// namespaces owned by a new user namespace that maps m (pods with
// hostUsers: false, which Kubernetes' validation keeps off the host's
// network, IPC and PID namespaces).
func (h hostSandboxes) CreateInUserNS(pod *v1.Pod, m idMapping) (*Sandbox, error) {
	if pod.Spec.HostNetwork || pod.Spec.HostIPC {
		return nil, fmt.Errorf("%s with the host's network or IPC namespace", errUserNS)
	}
	sb := &Sandbox{ID: newID(), BootID: bootID()}
	dir := h.layout.SandboxDir(sb.ID)
	if err := os.MkdirAll(h.layout.Sandboxes(), 0o700); err != nil {
		return sb, fmt.Errorf("create sandbox dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return sb, fmt.Errorf("create sandbox dir: %w", err)
	}
	user, net, ipc := userNSPath(dir), filepath.Join(dir, "net"), filepath.Join(dir, "ipc")
	// The record names each file once it is a namespace, for Remove.
	err := newPodNamespaces(m, user, net, ipc)
	for _, f := range []struct {
		p   string
		rec *string
	}{{user, &sb.UserNS}, {net, &sb.NetNS}, {ipc, &sb.IPCNS}} {
		if nsfs.Is(f.p) {
			*f.rec = f.p
		}
	}
	if err != nil {
		return sb, err
	}
	sb.Shm, err = mountShm(dir)
	return sb, err
}
