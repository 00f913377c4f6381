package containerd

import (
	"context"
	"fmt"
	"os"

	apievents "github.com/containerd/containerd/api/events"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"
	"github.com/podvisor/podvisor/internal/images"
	"github.com/podvisor/podvisor/supervise"
)

// Events follows containerd's task exit and OOM events of the namespace.
// Exits of exec processes are not passed on. When the stream breaks, errs
// yields the reason and events is closed.
func (r *Runtime) Events(ctx context.Context) (<-chan supervise.RuntimeEvent, <-chan error) {
	filters := []string{
		fmt.Sprintf(`namespace==%q,topic=="/tasks/exit"`, r.opts.Namespace),
		fmt.Sprintf(`namespace==%q,topic=="/tasks/oom"`, r.opts.Namespace),
	}
	ch, errs := r.client.Subscribe(ctx, filters...)
	out := make(chan supervise.RuntimeEvent, 16)
	outErr := make(chan error, 1)
	go func() {
		defer close(out)
		for {
			select {
			case env, ok := <-ch:
				if !ok {
					outErr <- errStream
					return
				}
				if ev, ok := decode(env.Event); ok {
					select {
					case out <- ev:
					case <-ctx.Done():
						outErr <- ctx.Err()
						return
					}
				}
			case err := <-errs:
				if err == nil {
					err = errStream
				}
				outErr <- err
				return
			case <-ctx.Done():
				outErr <- ctx.Err()
				return
			}
		}
	}()
	return out, outErr
}

func decode(any typeurl.Any) (supervise.RuntimeEvent, bool) {
	if any == nil {
		return supervise.RuntimeEvent{}, false
	}
	ev, err := typeurl.UnmarshalAny(any)
	if err != nil {
		return supervise.RuntimeEvent{}, false
	}
	switch e := ev.(type) {
	case *apievents.TaskExit:
		if e.ID != e.ContainerID {
			return supervise.RuntimeEvent{}, false // an exec process, not the container's init
		}
		return supervise.RuntimeEvent{Type: supervise.EventExit, ContainerID: e.ContainerID}, true
	case *apievents.TaskOOM:
		return supervise.RuntimeEvent{Type: supervise.EventOOM, ContainerID: e.ContainerID}, true
	}
	return supervise.RuntimeEvent{}, false
}

// Import imports one OCI-layout or docker-save archive, names its images as
// docker does, and unpacks them for the snapshotter.
func (r *Runtime) Import(ctx context.Context, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	imgs, err := r.client.Import(ctx, f,
		client.WithImageRefTranslator(images.RefTranslator(path)),
		client.WithSkipDigestRef(func(string) bool { return true }),
	)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	var names []string
	for _, i := range imgs {
		img := client.NewImage(r.client, i)
		if err := img.Unpack(ctx, r.opts.Snapshotter); err != nil {
			return names, fmt.Errorf("unpack %s: %w", i.Name, err)
		}
		r.markUnpacked(img.Target().Digest.String(), true)
		names = append(names, i.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("archive names no image (no io.containerd.image.name or org.opencontainers.image.ref.name annotation, no RepoTags)")
	}
	return names, nil
}
