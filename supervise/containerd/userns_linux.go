package containerd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	apitypes "github.com/containerd/containerd/api/types"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/typeurl/v2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"
	"github.com/podvisor/podvisor/supervise"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

var _ supervise.UserNSRuntime = (*Runtime)(nil)

// usernsSupport remembers what each runtime class can do for user
// namespaces under one containerd version, as the CRI plugin reads the
// OCI runtime's features once at its start: a containerd upgraded (and so
// restarted) is asked again.
type usernsSupport struct {
	mu    sync.Mutex
	known map[string]supervise.UserNSSupport // by containerd version and runtime class name
}

// UserNamespaces tells whether pods can run in user namespaces, as the CRI
// plugin tells kubelet (its runtime handler's UserNamespaces feature): the
// image's layers are idmapped by the snapshotter, which containerd does
// from 2.0 on, and the OCI runtime must know user namespaces. Volumes need
// the OCI runtime's idmapped mounts besides (runc 1.2 or later): without
// them pods that mount no volume still run.
func (r *Runtime) UserNamespaces(ctx context.Context, pod *v1.Pod) (supervise.UserNSSupport, error) {
	class := ""
	if pod != nil && pod.Spec.RuntimeClassName != nil {
		class = *pod.Spec.RuntimeClassName
	}
	rc, err := r.podClass(pod)
	if err != nil {
		return supervise.UserNSSupport{}, err
	}
	v, err := r.client.Version(ctx)
	if err != nil {
		return supervise.UserNSSupport{}, fmt.Errorf("containerd version: %w", err)
	}
	key := v.Version + "/" + class
	r.userns.mu.Lock()
	defer r.userns.mu.Unlock()
	if s, ok := r.userns.known[key]; ok {
		return s, nil
	}
	s, err := r.userNamespaces(ctx, v.Version, rc)
	if err != nil {
		return s, err
	}
	if r.userns.known == nil {
		r.userns.known = map[string]supervise.UserNSSupport{}
	}
	r.userns.known[key] = s
	return s, nil
}

func (r *Runtime) userNamespaces(ctx context.Context, version string, rc RuntimeClass) (supervise.UserNSSupport, error) {
	if major(version) < 2 {
		return supervise.UserNSSupport{Unsupported: fmt.Sprintf("containerd %s cannot map the image's files to the pod's IDs (containerd 2.0 or later can)", version)}, nil
	}
	f, err := r.runtimeFeatures(ctx, rc)
	if err != nil {
		return supervise.UserNSSupport{}, err
	}
	name := ociRuntimeName(f)
	if f.Linux == nil || !slices.Contains(f.Linux.Namespaces, string(specs.UserNamespace)) {
		return supervise.UserNSSupport{Unsupported: name + " does not list user namespaces among its features"}, nil
	}
	var s supervise.UserNSSupport
	if m := f.Linux.MountExtensions; m == nil || m.IDMap == nil || m.IDMap.Enabled == nil || !*m.IDMap.Enabled {
		s.NoIDMapMounts = name + " cannot make idmapped mounts (runc 1.2 or later can)"
	}
	return s, nil
}

// runtimeFeatures asks containerd for the OCI runtime's features (`runc
// features`), as the CRI plugin does.
func (r *Runtime) runtimeFeatures(ctx context.Context, rc RuntimeClass) (*features.Features, error) {
	rtType, rtOpts := rc.runtime()
	req := &apitypes.RuntimeRequest{RuntimePath: rtType}
	if rtOpts != nil {
		o, err := typeurl.MarshalAnyToProto(rtOpts)
		if err != nil {
			return nil, fmt.Errorf("runtime features: %w", err)
		}
		req.Options = o
	}
	resp, err := r.client.IntrospectionService().PluginInfo(ctx, "io.containerd.runtime.v2", "task", req)
	if err != nil {
		return nil, fmt.Errorf("runtime features: %w", err)
	}
	if resp.Extra == nil {
		return nil, fmt.Errorf("runtime features: containerd gave no runtime info")
	}
	var info apitypes.RuntimeInfo
	if err := typeurl.UnmarshalTo(resp.Extra, &info); err != nil {
		return nil, fmt.Errorf("runtime features: %w", err)
	}
	if info.Features == nil {
		return nil, fmt.Errorf("runtime features: the runtime reports none")
	}
	var f features.Features
	if err := json.Unmarshal(info.Features.GetValue(), &f); err != nil {
		return nil, fmt.Errorf("runtime features: %w", err)
	}
	return &f, nil
}

// ociRuntimeName names the OCI runtime as its features do ("runc
// 1.1.5+ds1").
func ociRuntimeName(f *features.Features) string {
	if v := f.Annotations["org.opencontainers.runc.version"]; v != "" {
		return "runc " + v
	}
	return "the OCI runtime"
}

// major is the major version of a containerd version ("1.6.20~ds1",
// "v2.4.2"); 0 when it cannot be read.
func major(v string) int {
	v = strings.TrimPrefix(v, "v")
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// newSnapshot is the container's writable layer: for a pod in a user
// namespace, the image's layers idmapped to the pod's IDs by the
// snapshotter (the CRI's remapper labels), so that the files of the
// image's root are the pod's root's.
func (r *Runtime) newSnapshot(cfg supervise.ContainerConfig, img client.Image) client.NewContainerOpts {
	u := cfg.UserNS
	if u == nil {
		return withNewSnapshot(cfg.ID, img, r.opts.Snapshotter)
	}
	sn := client.WithSnapshotter(r.opts.Snapshotter)
	ns := client.WithNewSnapshot(cfg.ID, img, client.WithRemapperLabels(0, u.HostID, 0, u.HostID, u.Size))
	return func(ctx context.Context, cl *client.Client, c *containers.Container) error {
		if err := sn(ctx, cl, c); err != nil {
			return err
		}
		return ns(ctx, cl, c)
	}
}

// withUserNS joins the container to its pod's user namespace with the
// pod's mappings, and mounts the pod's volumes and files idmapped when
// the runtime can (as the CRI does; /dev/shm, empty and 1777, is not).
func withUserNS(u *supervise.UserNamespace, idmapMounts bool, volumes []specs.Mount) oci.SpecOpts {
	ids := []specs.LinuxIDMapping{{ContainerID: 0, HostID: u.HostID, Size: u.Size}}
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if err := oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UserNamespace, Path: u.Path})(ctx, cl, c, s); err != nil {
			return err
		}
		if err := oci.WithUserNamespace(ids, ids)(ctx, cl, c, s); err != nil {
			return err
		}
		if !idmapMounts {
			return nil
		}
		for i := range s.Mounts {
			m := &s.Mounts[i]
			if m.Type == "bind" && m.Destination != "/dev/shm" && slices.ContainsFunc(volumes, func(v specs.Mount) bool { return v.Destination == m.Destination }) {
				m.UIDMappings, m.GIDMappings = ids, ids
			}
		}
		return nil
	}
}

// userNSOpts are the spec options of a container of a pod in a user
// namespace (none for the host's).
func (r *Runtime) userNSOpts(ctx context.Context, cfg supervise.ContainerConfig) ([]oci.SpecOpts, error) {
	if cfg.UserNS == nil {
		if hu := cfg.Pod.Spec.HostUsers; hu != nil && !*hu {
			// Never the host's IDs for a pod that asked for its own (a
			// sandbox whose pod record, holding its range, was lost).
			return nil, fmt.Errorf("%w: the pod's user namespace is not known: remove the pod's manifest and add it again", supervise.ErrContainerConfig)
		}
		return nil, nil
	}
	s, err := r.UserNamespaces(ctx, cfg.Pod)
	if err != nil {
		return nil, err
	}
	if s.Unsupported != "" {
		return nil, fmt.Errorf("%w: user namespace: %s", supervise.ErrContainerConfig, s.Unsupported)
	}
	idmap := s.NoIDMapMounts == ""
	if idmap {
		for _, m := range cfg.Mounts {
			if m.Type != "bind" || m.Destination == "/dev/shm" {
				continue
			}
			if err := checkIDMappable(m.Source, cfg.UserNS.Path); err != nil {
				return nil, fmt.Errorf("%w: user namespace: %s cannot be mounted idmapped at %s: %w", supervise.ErrContainerConfig, m.Source, m.Destination, err)
			}
		}
	}
	return []oci.SpecOpts{withUserNS(cfg.UserNS, idmap, cfg.Mounts)}, nil
}

// checkIDMappable tries on a detached copy of the mount at src what runc
// does to mount it idmapped into the user namespace at userns, and says
// what is missing when the kernel refuses (tmpfs, whose secret volumes and
// medium Memory emptyDirs podvisor uses, has idmapped mounts from Linux
// 6.3 on; Debian 12's kernel is 6.1).
func checkIDMappable(src, userns string) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	ns, err := unix.Open(userns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(ns)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns)}
	err = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr)
	if err == nil {
		return nil
	}
	var st unix.Statfs_t
	var uts unix.Utsname
	if unix.Fstatfs(tree, &st) != nil || unix.Uname(&uts) != nil {
		return fmt.Errorf("idmapped mount: %w", err)
	}
	fs := fmt.Sprintf("filesystem type %#x", st.Type)
	if st.Type == unix.TMPFS_MAGIC {
		fs = "tmpfs (idmapped from Linux 6.3 on)"
	}
	return fmt.Errorf("its %s has no idmapped mounts on Linux %s: %w", fs, unix.ByteSliceToString(uts.Release[:]), err)
}
