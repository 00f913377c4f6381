package containerd

import (
	"context"
	"fmt"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"
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
