package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podvisor/podvisor/internal/podinit"
	"github.com/podvisor/podvisor/supervise"
)

// A pod that shares its process namespace (shareProcessNamespace) needs a
// process that lives as long as its sandbox to hold that namespace: a PID
// namespace whose first process ended takes no new one, whatever holds it
// open. kubelet's pause container is that process; podvisor has no pause
// image, so the pod's init runs podvisor's own small binary (the log
// driver's, see package podinit) from a root directory podvisor makes,
// read-only, with nothing in it but the binary, /proc and an empty /dev.

// podInitPath is where the init binary is in the init's root: `ps` in
// the pod's containers shows PID 1 as "/podvisor pod-init".
const podInitPath = "/podvisor"

// podInitUser is the init's user and group, the pause image's (65535): it
// needs no privilege to reap its children.
const podInitUser = 65535

// podInitCPUShares is the init's CPU weight, the CRI plugin's for a
// sandbox container.
const podInitCPUShares = 2

// createPodInit creates the container of a pod's init: its own PID, mount
// and UTS namespaces, the pod's network and IPC namespaces (the host's
// when the pod has them), no capabilities, in its cgroup below the pod's
// in the shim and the runtime (class) of the pod's containers.
func (r *Runtime) createPodInit(ctx context.Context, cfg supervise.ContainerConfig) error {
	if r.opts.PodInit == "" || r.opts.PodInitRoot == "" {
		return fmt.Errorf("%w: no pod init binary configured", supervise.ErrContainerConfig)
	}
	rtType, rtOpts, err := r.podRuntime(cfg.Pod)
	if err != nil {
		return err
	}
	if err := podInitRoot(r.opts.PodInitRoot); err != nil {
		return err
	}
	spec := podInitSpec(cfg, r.opts.PodInit, r.opts.PodInitRoot)
	var opts []oci.SpecOpts
	if cfg.UserNS != nil {
		// In the pod's user namespace, so that the process namespace it
		// makes is one the pod's containers may join.
		opts = append(opts, withUserNS(cfg.UserNS, false, nil))
	}
	labels := make(map[string]string, len(cfg.Labels)+1)
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[supervise.LabelStopSignal] = strconv.Itoa(int(syscall.SIGTERM))
	ctr, err := r.client.NewContainer(ctx, cfg.ID,
		client.WithRuntime(rtType, rtOpts),
		client.WithContainerLabels(labels),
		client.WithSpec(spec, opts...),
	)
	if err != nil {
		return fmt.Errorf("create pod init container: %w", err)
	}
	r.mu.Lock()
	r.created[cfg.ID] = ctr
	r.mu.Unlock()
	return nil
}

// podInitRoot makes the init's root directory: the mount points of /dev
// (a tmpfs in the container), /proc and the binary. It is shared by every
// pod's init and only read by them.
func podInitRoot(root string) error {
	for _, d := range []string{"dev", "proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return fmt.Errorf("pod init root: %w", err)
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return fmt.Errorf("pod init root: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(root, podInitPath), os.O_RDONLY|os.O_CREATE, 0o444)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("pod init root: %w", err)
	}
	if f != nil {
		f.Close()
	}
	return nil
}

// podInitSpec is the OCI spec of a pod's init running binary from root.
func podInitSpec(cfg supervise.ContainerConfig, binary, root string) *oci.Spec {
	adj := cfg.OOMScoreAdj
	shares := uint64(podInitCPUShares)
	s := &oci.Spec{
		Version: specs.Version,
		Root:    &specs.Root{Path: root, Readonly: true},
		Process: &specs.Process{
			Args: []string{podInitPath, podinit.Arg},
			// One P is all a loop of wait4 needs: fewer threads, less
			// memory.
			Env:             []string{"GOMAXPROCS=1"},
			Cwd:             "/",
			User:            specs.User{UID: podInitUser, GID: podInitUser},
			Capabilities:    &specs.LinuxCapabilities{},
			NoNewPrivileges: true,
			OOMScoreAdj:     &adj,
		},
		Mounts: []specs.Mount{
			// runc reads /proc/self/fd before it starts the binary.
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "strictatime", "mode=755", "size=64k"}},
			{Destination: podInitPath, Type: "bind", Source: binary, Options: []string{"rbind", "ro", "nosuid", "nodev"}},
		},
		Annotations: map[string]string{groupAnnotation: cfg.SandboxID},
		Linux: &specs.Linux{
			CgroupsPath: cfg.CgroupsPath,
			Resources: &specs.LinuxResources{
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
				CPU:     &specs.LinuxCPU{Shares: &shares},
			},
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}},
		},
	}
	ns := &s.Linux.Namespaces
	if cfg.NetNS != "" {
		*ns = append(*ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: cfg.NetNS},
			specs.LinuxNamespace{Type: specs.UTSNamespace})
		s.Hostname = cfg.Hostname
	}
	if cfg.IPCNS != "" {
		*ns = append(*ns, specs.LinuxNamespace{Type: specs.IPCNamespace, Path: cfg.IPCNS})
	}
	return s
}
