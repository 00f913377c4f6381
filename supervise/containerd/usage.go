package containerd

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// usageTimeout bounds each call of ImageFSRoot and WritableLayerUsage
// when the runtime has no request timeout.
const usageTimeout = 10 * time.Second

func (r *Runtime) usageContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, cmpDuration(r.opts.RequestTimeout, usageTimeout))
}

func cmpDuration(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}

// ImageFSRoot is the directory of containerd's snapshotter, where image
// layers and containers' writable layers live: the "root" its plugin
// exports, as containerd's introspection service tells it (1.6 and 2.x).
func (r *Runtime) ImageFSRoot(ctx context.Context) (string, error) {
	ctx, cancel := r.usageContext(ctx)
	defer cancel()
	resp, err := r.client.IntrospectionService().Plugins(ctx, "type==io.containerd.snapshotter.v1,id=="+r.opts.Snapshotter)
	if err != nil {
		return "", fmt.Errorf("containerd introspection: %w", err)
	}
	for _, p := range resp.GetPlugins() {
		if root := p.GetExports()["root"]; root != "" {
			return root, nil
		}
	}
	return "", fmt.Errorf("containerd's %s snapshotter exports no root", r.opts.Snapshotter)
}

// WritableLayerUsage is the disk space a container's writable layer takes
// (its snapshot's usage; overlayfs measures its upper directory).
func (r *Runtime) WritableLayerUsage(ctx context.Context, containerID string) (uint64, error) {
	ctx, cancel := r.usageContext(ctx)
	defer cancel()
	c, err := r.client.LoadContainer(ctx, containerID)
	if err != nil {
		return 0, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.SnapshotKey == "" {
		return 0, errors.New("no snapshot")
	}
	u, err := r.client.SnapshotService(info.Snapshotter).Usage(ctx, info.SnapshotKey)
	if err != nil {
		return 0, err
	}
	return uint64(max(u.Size, 0)), nil
}
