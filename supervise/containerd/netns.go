package containerd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	client "github.com/containerd/containerd/v2/client"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/supervise"
)

// ErrNoSandbox means a pod has no container in containerd to tell its
// sandbox by.
var ErrNoSandbox = errors.New("no container of the pod names its sandbox")

// PodSandbox is where a pod's containers were put, as its newest
// container's record says: the sandbox they share, and the network
// namespace file their spec joins ("" when it joins none, the host's).
type PodSandbox struct {
	ID    string
	NetNS string
}

// PodSandbox returns the sandbox of the pod uid from its newest
// container, running or not: the labels and the OCI spec podvisor wrote
// when it created it, which no process of the container can change. The
// network namespace is the path the sandbox pinned (a bind mount), never
// a process's, so it stays the pod's whichever of its containers run.
func (r *Runtime) PodSandbox(ctx context.Context, uid string) (_ PodSandbox, err error) {
	defer markUnavailable(&err)
	ctx, cancel := r.callContext(ctx)
	defer cancel()
	filter := "labels." + strconv.Quote(supervise.LabelPodUID) + "==" + strconv.Quote(uid)
	ctrs, err := r.client.Containers(ctx, filter)
	if err != nil {
		return PodSandbox{}, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	var newest client.Container
	var newestInfo PodSandbox
	var newestAt int64
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			continue // removed meanwhile
		}
		sb := info.Labels[supervise.LabelSandboxID]
		if sb == "" || info.Labels[supervise.LabelPodUID] != uid {
			continue
		}
		if at := info.CreatedAt.UnixNano(); newest == nil || at > newestAt {
			newest, newestAt, newestInfo = c, at, PodSandbox{ID: sb}
		}
	}
	if newest == nil {
		return PodSandbox{}, fmt.Errorf("pod %s: %w", uid, ErrNoSandbox)
	}
	spec, err := newest.Spec(ctx)
	if err != nil {
		return PodSandbox{}, fmt.Errorf("spec of container %s: %w", newest.ID(), err)
	}
	if spec.Linux != nil {
		for _, ns := range spec.Linux.Namespaces {
			if ns.Type == specs.NetworkNamespace {
				newestInfo.NetNS = ns.Path
			}
		}
	}
	return newestInfo, nil
}
